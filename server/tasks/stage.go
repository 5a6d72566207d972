package tasks

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
)

// Stage is the tasks' stage of the call chain: the task a task-augmented
// tools/call created upstream is adopted for the call's session (an S,
// which Session says) on the connection the call went on (Call.Conn),
// under an id of the hub's (Adopt). Any other call passes as it is.
type Stage[S Session] struct {
	Table *Table[S]
	// Session is the hub's session a call is made in, as the table keeps
	// it, the zero S for one that ended: given by the hub (the open
	// session the call's owner is), not asserted from Call.Owner.
	Session func(c *call.Call) S
}

// Handle passes c on and adopts the task its result names.
func (s Stage[S]) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if !c.Task {
		return next.Handle(ctx, c)
	}
	res, err := next.Handle(ctx, c)
	if err != nil {
		return res, err
	}
	var ended S
	sess := s.Session(c)
	if sess == ended {
		return res, nil // no one to route the task to, as Adopt answers a session that ended
	}
	return s.Table.Adopt(sess, c.Upstream, c.Conn, res), nil
}
