package rounds

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
)

// Stage is the rounds' stage of the call chain, the last before the call
// is sent (the retry that answered a prompt rule's question comes to it as
// a first call: Round took the round's requestState and inputResponses
// off its params when the answer let it through); a 2026-07-28 client's
// call is held between its rounds
// or relayed with its requestState sealed (Rounds.Call), and sent by the
// rounds themselves; an older client's call that a 2026-07-28 server
// answers input_required is fulfilled (Rounds.Fulfil). A call with a task
// passes as it is.
type Stage struct {
	Rounds *Rounds
}

// Handle sends c through its rounds, or passes it on.
func (s Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Task {
		return next.Handle(ctx, c)
	}
	if c.Modern && InputMethod(c.Method) {
		params, err := c.Outgoing()
		if err != nil {
			return nil, err
		}
		c.Sent = true // a tool's result fits max_result (resultcap.Stage)
		return s.Rounds.Call(ctx, c, c.Upstream, params, c.Timeout)
	}
	res, err := next.Handle(ctx, c)
	if err != nil || c.Modern || !era.IsInputRequired(res) {
		return res, err
	}
	params, err := c.Outgoing() // as the end sent them: they succeeded there
	if err != nil {
		return nil, err
	}
	return s.Rounds.Fulfil(ctx, c, c.Upstream, params, res, c.Timeout)
}
