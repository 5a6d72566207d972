package resultcap

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
)

// Stage is the result budget's stage of the request chain: the result of
// a tools/call the chain sent upstream (Call.Sent; no task's), cut to the
// client's max_result when it is over it, the whole kept in Store for the
// session to read; any other result passes as it is.
//
// It is a stage of the request chain, outside the 2026-07-28 decoration
// (server/era), not of the call chain: max_result bounds the bytes the
// client gets, and the decoration (resultType) is added after the call
// chain, so a stage at the call chain's end would measure a result ~25
// bytes short of what is sent, and the cut answer would be over the cap
// by that much.
type Stage struct {
	Store *Store
}

// Handle passes c on and cuts what comes back when it is a tool's own
// result over the client's max_result.
func (s Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	res, err := next.Handle(ctx, c)
	if err != nil || !c.Sent || c.Method != policy.MethodToolsCall || c.Task {
		return res, err
	}
	limit := c.MaxResult
	if !Over(res, limit) || era.IsInputRequired(res) {
		return res, nil
	}
	return s.Store.Cut(res, limit, len(c.ID), Call{Caller: c.Session.Caller(),
		Group: c.Server.Group, Server: c.Server.Name, Tool: c.Name, Args: c.Args}), nil
}

// Over reports whether a result of res's size is over limit, a client's
// max_result (0 for none): whether Cut would cut it.
func Over(res []byte, limit int) bool { return limit > 0 && len(res) > limit }
