// Package observe is the observers' stage of the call chain: it tells
// the traffic observers (the inspector, metrics, traces) where a call
// goes and what the policy and rate limit decided, before the decision is
// enforced, so that a call that waits for a person, or is denied, shows
// where it was going. It imports the call contract and types/traffic,
// never the hub: the observed call is made where the hub reads the
// request, for every method, and carried on its Call (Call.Observed).
//
// It holds the hub's observer too (Traffic), and sends every hop to an
// upstream, so that the observers see each one (Traffic.Request).
package observe

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
)

// Stage notes on a call's observed call where it goes and what was
// decided.
type Stage struct{}

// Handle notes on c's observed call (Call.Observed), if any, and passes c
// on.
func (Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if o := c.Observed; o != nil {
		o.Group, o.Server, o.Target, o.Rule, o.Action = c.Server.Group, c.Server.Name, c.Name, c.Decision.Rule, c.Notes.Verdict
	}
	return next.Handle(ctx, c)
}
