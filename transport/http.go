package transport

import (
	"context"
	"fmt"
	"log/slog"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// NewHTTP builds mcp-go's transport for a remote server: Streamable HTTP or
// legacy SSE as configured. With no transport configured it is Streamable
// HTTP; the caller falls back to SSE when that fails.
func NewHTTP(ctx context.Context, cfg *config.Server, logger *slog.Logger) (mcptransport.Interface, error) {
	switch cfg.Transport {
	case config.TransportSSE:
		tr, err := mcptransport.NewSSE(cfg.URL, mcptransport.WithHeaders(cfg.Headers), mcptransport.WithSSELogger(logger))
		if err != nil {
			return nil, fmt.Errorf("sse transport: %w", err)
		}
		return tr, nil
	default:
		tr, err := mcptransport.NewStreamableHTTP(cfg.URL,
			mcptransport.WithHTTPHeaders(cfg.Headers),
			mcptransport.WithContinuousListening(),
			mcptransport.WithHTTPLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("streamable http transport: %w", err)
		}
		return tr, nil
	}
}
