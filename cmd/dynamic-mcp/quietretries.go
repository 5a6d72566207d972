package main

import (
	"context"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// withoutRetryErrors is logger without the record each failed try to
// connect logs (upstream.LogUnavailable), for a command that prints each
// server's failure itself: status and tools would otherwise repeat it,
// once a try, above their answer. At debug level every record stays.
func withoutRetryErrors(ctx context.Context, logger *slog.Logger) *slog.Logger {
	if logger.Enabled(ctx, slog.LevelDebug) {
		return logger
	}
	return slog.New(dropMessage{logger.Handler(), upstream.LogUnavailable})
}

// dropMessage is a handler that passes on every record but those whose
// message is msg.
type dropMessage struct {
	slog.Handler
	msg string
}

func (h dropMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h dropMessage) WithAttrs(attrs []slog.Attr) slog.Handler {
	return dropMessage{h.Handler.WithAttrs(attrs), h.msg}
}

func (h dropMessage) WithGroup(name string) slog.Handler {
	return dropMessage{h.Handler.WithGroup(name), h.msg}
}
