package transport

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// unbounded stands for no timeout where mcp-go insists on one.
const unbounded = 365 * 24 * time.Hour

// legacyOnly keeps Streamable HTTP sessions on 2025-11-25, the newest
// version before 2026-07-28, with any server. On 2026-07-28 a server asks
// the client things (sampling, elicitation, roots) with input_required
// results (SEP-2322), and sends notifications only on a
// subscriptions/listen request (SEP-2575); the hub, which sends raw
// requests (upstream/conn.go), handles neither yet, and would pass the
// first on as results and never hear the second. Set it to false when it
// does.
const legacyOnly = true

// NewHTTP builds mcp-go's transport for a remote server: Streamable HTTP or
// legacy SSE as configured. With no transport configured it is Streamable
// HTTP; the caller falls back to SSE when that fails.
//
// Neither has a timeout of its own on a request: a long tool call is bounded
// by the hub's call timeout, carried by the request's context.
//
// What the server sends is bounded by settings.MaxMessageSize: a body in
// all, an SSE event each (limitTransport). settings.ConnectTimeout bounds
// waiting for the SSE endpoint.
//
// authorization, when not nil, gives the Authorization header of each
// request (an OAuth sign-in); it overrides a configured one.
func NewHTTP(cfg *config.Server, settings config.ServerSettings, authorization func(context.Context) (string, error), logger *slog.Logger) (mcptransport.Interface, error) {
	limit := settings.MaxMessageSize
	if limit <= 0 {
		limit = config.DefaultMaxMessageSize
	}
	client := newHTTPClient(limit)
	headerFunc := func(ctx context.Context) map[string]string {
		if authorization == nil {
			return nil
		}
		h, err := authorization(ctx)
		if err != nil {
			logger.Warn("no OAuth token for the request", "err", err)
			return nil
		}
		return map[string]string{"Authorization": h}
	}
	switch cfg.Transport {
	case config.TransportSSE:
		tr, err := mcptransport.NewSSE(cfg.URL, mcptransport.WithHTTPClient(client),
			mcptransport.WithHeaders(cfg.Headers), mcptransport.WithSSELogger(logger),
			mcptransport.WithHeaderFunc(headerFunc),
			mcptransport.WithEndpointTimeout(settings.ConnectTimeout), mcptransport.WithResponseTimeout(unbounded))
		if err != nil {
			return nil, fmt.Errorf("sse transport: %w", err)
		}
		return tr, nil
	default:
		tr, err := mcptransport.NewStreamableHTTP(cfg.URL, mcptransport.WithHTTPBasicClient(client),
			mcptransport.WithHTTPHeaders(cfg.Headers),
			mcptransport.WithHTTPHeaderFunc(headerFunc),
			mcptransport.WithHTTPLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("streamable http transport: %w", err)
		}
		return newStreamable(tr, cfg.URL, client, cfg.Headers, headerFunc, legacyOnly, logger), nil
	}
}
