package transport

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// HTTPStream is the stream of a remote upstream, Streamable HTTP or
// legacy SSE; SetProtocolVersion gives it the version the handshake
// settled on, which its requests carry from then on (with the standard
// headers of 2026-07-28, Mcp-Param-* named by SetParamHeaders); Fail ends it at once
// (the hub gave up on the server); Related ties a request of the server's
// to the request of the hub's whose answer it came in.
type HTTPStream interface {
	jsonrpc.Stream
	SetProtocolVersion(version string)
	SetParamHeaders(f func(params json.RawMessage) map[string]string)
	Fail(err error)
	Related(id json.RawMessage) json.RawMessage
}

// NewHTTP opens the stream of a remote server: Streamable HTTP or legacy
// SSE as configured. With no transport configured it is Streamable HTTP;
// the caller falls back to SSE when its initialize is refused with a 4xx.
// Legacy SSE's event stream is opened here, and its endpoint waited for
// within settings.ConnectTimeout and ctx.
//
// Neither has a timeout of its own on a request: a long tool call is
// bounded by the hub's call timeout. What the server sends is bounded by
// settings.MaxMessageSize: a JSON answer in all, an SSE event each.
//
// authorization, when not nil, gives the Authorization header of each
// request (an OAuth sign-in); it overrides a configured one.
func NewHTTP(ctx context.Context, cfg *config.Server, settings config.ServerSettings, authorization func(context.Context) (string, error), logger *slog.Logger) (HTTPStream, error) {
	limit := settings.MaxMessageSize
	if limit <= 0 {
		limit = config.DefaultMaxMessageSize
	}
	if cfg.Transport == config.TransportSSE {
		if settings.ConnectTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, settings.ConnectTimeout)
			defer cancel()
		}
		return DialSSE(ctx, cfg.URL, cfg.Headers, authorization, limit, logger)
	}
	return NewStreamable(cfg.URL, cfg.Headers, authorization, limit, logger), nil
}
