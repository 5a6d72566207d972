package redact

import (
	"context"
	"log/slog"
)

// logHandler writes every log record with the values of the current
// secrets replaced by [secret:NAME] (Secrets.Text), so that a child that
// prints its key on stderr, or an error that quotes it, does not put it in
// the hub's log.
type logHandler struct {
	slog.Handler
	current func() *Secrets
}

// NewLogHandler wraps h; current is asked for the secrets at each record,
// so that a reloaded config's are redacted from then on.
func NewLogHandler(h slog.Handler, current func() *Secrets) slog.Handler {
	return logHandler{h, current}
}

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	s := h.current()
	if s == nil {
		return h.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, s.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(s, a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func redactAttr(s *Secrets, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.Text(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = redactAttr(s, g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, s.Text(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	s := h.current()
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = redactAttr(s, a)
	}
	return logHandler{h.Handler.WithAttrs(out), h.current}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name), h.current}
}
