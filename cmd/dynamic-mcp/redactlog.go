package main

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// redactingHandler writes every log record with the values of the current
// config's ${secret:NAME} replaced by [secret:NAME] (config.RedactSecrets),
// so that a child that prints its key on stderr, or an error that quotes
// it, does not put it in the hub's log.
type redactingHandler struct {
	slog.Handler
	cfg *atomic.Pointer[config.Config]
}

// redactLogs wraps logger's handler; set swaps in a reloaded config.
func redactLogs(logger *slog.Logger, cfg *config.Config) (_ *slog.Logger, set func(*config.Config)) {
	p := new(atomic.Pointer[config.Config])
	p.Store(cfg)
	return slog.New(redactingHandler{logger.Handler(), p}), p.Store
}

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	c := h.cfg.Load()
	if len(c.SecretUses) == 0 {
		return h.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, c.RedactText(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(c, a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func redactAttr(c *config.Config, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, c.RedactText(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = redactAttr(c, g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, c.RedactText(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := h.cfg.Load()
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = redactAttr(c, a)
	}
	return redactingHandler{h.Handler.WithAttrs(out), h.cfg}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h.Handler.WithGroup(name), h.cfg}
}
