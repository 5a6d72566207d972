package call

import (
	"context"
	"encoding/json"
)

// Chain is an ordered list of stages, outermost first: built once (per
// config snapshot) and linked to its end once (Then), run for each call.
type Chain struct {
	stages []Stage
}

// New is the chain of stages, outermost first.
func New(stages ...Stage) *Chain { return &Chain{stages: stages} }

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
