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

// NewHTTP builds mcp-go's transport for a remote server: Streamable HTTP or
// legacy SSE as configured. With no transport configured it is Streamable
// HTTP; the caller falls back to SSE when that fails.
//
// Neither has a timeout of its own on a request: a long tool call is bounded
// by the hub's call timeout, carried by the request's context.
//
// authorization, when not nil, gives the Authorization header of each
// request (an OAuth sign-in); it overrides a configured one.
func NewHTTP(cfg *config.Server, connectTimeout time.Duration, authorization func(context.Context) (string, error), logger *slog.Logger) (mcptransport.Interface, error) {
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
		tr, err := mcptransport.NewSSE(cfg.URL, mcptransport.WithHeaders(cfg.Headers), mcptransport.WithSSELogger(logger),
			mcptransport.WithHeaderFunc(headerFunc),
			mcptransport.WithEndpointTimeout(connectTimeout), mcptransport.WithResponseTimeout(unbounded))
		if err != nil {
			return nil, fmt.Errorf("sse transport: %w", err)
		}
		return tr, nil
	default:
		tr, err := mcptransport.NewStreamableHTTP(cfg.URL,
			mcptransport.WithHTTPHeaders(cfg.Headers),
			mcptransport.WithHTTPHeaderFunc(headerFunc),
			mcptransport.WithContinuousListening(),
			mcptransport.WithHTTPLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("streamable http transport: %w", err)
		}
		return tr, nil
	}
}
