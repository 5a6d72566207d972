package call

import (
	"context"
	"encoding/json"
	"slices"
)

// Chain is an ordered list of stages, outermost first: built once (per
// config snapshot) and linked to its end once (Then), run for each call.
// The hops' stages are linked the same way, once (Hops).
type Chain struct {
	stages []Stage
}

// New is the chain of stages, outermost first. A nil stage is left out:
// one a config does not need (see If).
func New(stages ...Stage) *Chain {
	return &Chain{stages: slices.DeleteFunc(stages, func(s Stage) bool { return s == nil })}
}

// If is s when on, else nil, which New leaves out: a concern a config
// snapshot does not have (an audit trail that is off, no rule with a
// rate) is no stage of its chain, and its calls do not pass it.
func If(on bool, s Stage) Stage {
	if !on {
		return nil
	}
	return s
}

// When is s for the calls when holds for; the others pass by it without
// entering it. Some concerns have nothing to do with most calls (a task
// to adopt when the call asks for none, a progress token to map when its
// params carry no _meta): such a stage is left off those calls' path as
// If leaves a stage out of a snapshot's chain and HopIf off a hop's.
// when reads only the call, cheaply: it runs for every call that reaches
// s, and s still decides for itself what to do with the calls it gets.
func When(when func(*Call) bool, s Stage) Stage { return callWhen{stage: s, when: when} }

// callWhen is a stage for the calls when holds for (When).
type callWhen struct {
	stage Stage
	when  func(*Call) bool
}

func (w callWhen) Handle(ctx context.Context, c *Call, next Handler) (json.RawMessage, error) {
	if !w.when(c) {
		return next.Handle(ctx, c)
	}
	return w.stage.Handle(ctx, c, next)
}

// Len is how many stages the chain has.
func (ch *Chain) Len() int { return len(ch.stages) }

// link is one stage with the handler after it.
type link struct {
	stage Stage
	next  Handler
}

func (l *link) Handle(ctx context.Context, c *Call) (json.RawMessage, error) {
	return l.stage.Handle(ctx, c, l.next)
}

// Then is the chain ending in end (the handler that sends a call
// upstream): the stages linked once, in order, so that running a call
// through it allocates nothing of its own (caddy's Compile).
func (ch *Chain) Then(end Handler) Handler {
	next := end
	for i := len(ch.stages) - 1; i >= 0; i-- {
		next = &link{stage: ch.stages[i], next: next}
	}
	return next
}

// End is the end of a request chain: the call's own Handler (Origin),
// which the hub set where it read the request.
var End Handler = HandlerFunc(func(ctx context.Context, c *Call) (json.RawMessage, error) {
	return c.Handler.Handle(ctx, c)
})

// HopHandler sends a hop: the raw result and the connection it went on,
// or the error.
type HopHandler interface {
	Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error)
}

// HopFunc is a func as a HopHandler.
type HopFunc func(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error)

// Hop calls f.
func (f HopFunc) Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error) {
	return f(ctx, h)
}

// HopStage is one concern of every request upstream: it passes the hop to
// next (once, or again when what stood in its way is gone: a sign-in),
// and may look at and change what comes back.
type HopStage interface {
	Hop(ctx context.Context, h *Hop, next HopHandler) (json.RawMessage, ConnID, error)
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

// HopIf is s for the hops when holds for; the others pass by it without
// entering it. A hop stage is of every request upstream, so a concern
// that has nothing to do with a hop (redaction under a config that
// resolves no secret, sign-in to a server without auth: per-user) is
// left off that hop's path as If leaves a stage out of a snapshot's
// chain: when reads only the hop.
func HopIf(when func(*Hop) bool, s HopStage) HopStage { return hopWhen{stage: s, when: when} }

// hopWhen is a stage for the hops when holds for (HopIf).
type hopWhen struct {
	stage HopStage
	when  func(*Hop) bool
}

func (w hopWhen) Hop(ctx context.Context, h *Hop, next HopHandler) (json.RawMessage, ConnID, error) {
	if !w.when(h) {
		return next.Hop(ctx, h)
	}
	return w.stage.Hop(ctx, h, next)
}

// hopLink is one hop stage with the handler after it.
type hopLink struct {
	stage HopStage
	next  HopHandler
}

func (l *hopLink) Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error) {
	return l.stage.Hop(ctx, h, l.next)
}
