package call

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Hop is one request to an upstream server: the one the end of the chain
// sends for a Call, or another the hub sends for a client's request (a
// completion, a task's status, a 2026-07-28 round) or for no one's (an
// unsubscribe, a call held between rounds). What every request upstream
// goes through, whoever sends it (per-user sign-in, redaction), is a
// HopStage; a concern of a client's call alone is a Stage.
type Hop struct {
	Call    *Call            // the client's request it is sent for, nil for none
	Owner   upstream.Owner   // whose request it is (see upstream's Request), nil for no one's
	Server  *upstream.Server // where it goes
	On      upstream.ConnID  // the connection it must go on, zero for any (upstream's RequestOn)
	Method  string
	Params  any
	Timeout time.Duration
	Config  *config.Config  // the config it is sent under
	Secrets *redact.Secrets // its secrets' redactor (Config.Secrets), nil when it resolves none
}

// HopHandler sends a hop: the raw result and the connection it went on,
// or the error.
type HopHandler interface {
	Hop(ctx context.Context, h *Hop) (json.RawMessage, upstream.ConnID, error)
}

// HopFunc is a func as a HopHandler.
type HopFunc func(ctx context.Context, h *Hop) (json.RawMessage, upstream.ConnID, error)

// Hop calls f.
func (f HopFunc) Hop(ctx context.Context, h *Hop) (json.RawMessage, upstream.ConnID, error) {
	return f(ctx, h)
}

// HopStage is one concern of every request upstream: it passes the hop to
// next (once, or again when what stood in its way is gone: a sign-in),
// and may look at and change what comes back.
type HopStage interface {
	Hop(ctx context.Context, h *Hop, next HopHandler) (json.RawMessage, upstream.ConnID, error)
}

// Hops are the hop stages, outermost first, linked once to end, the
// request itself (upstream's RequestOn).
func Hops(end HopHandler, stages ...HopStage) HopHandler {
	next := end
	for i := len(stages) - 1; i >= 0; i-- {
		next = &hopLink{stage: stages[i], next: next}
	}
	return next
}

// hopLink is one hop stage with the handler after it.
type hopLink struct {
	stage HopStage
	next  HopHandler
}

func (l *hopLink) Hop(ctx context.Context, h *Hop) (json.RawMessage, upstream.ConnID, error) {
	return l.stage.Hop(ctx, h, l.next)
}
