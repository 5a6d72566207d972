package call

import (
	"context"
	"encoding/json"
)

// Chain is an ordered list of stages, outermost first: built once (per
// config snapshot), run for each call.
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

// Run passes c through the chain's stages to end, which sends it
// upstream. The links are made per call in one allocation: end is the
// call's own (it holds the server and the owner it sends for).
func (ch *Chain) Run(ctx context.Context, c *Call, end Handler) (json.RawMessage, error) {
	if len(ch.stages) == 0 {
		return end.Handle(ctx, c)
	}
	links := make([]link, len(ch.stages))
	next := end
	for i := len(links) - 1; i >= 0; i-- {
		links[i] = link{stage: ch.stages[i], next: next}
		next = &links[i]
	}
	return next.Handle(ctx, c)
}
