package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// codePolicyBlocked answers a call a policy rule blocked.
const codePolicyBlocked = call.CodeBlocked

// call is one tool call, resource read or prompt get on its way upstream.
type upcall struct {
	method string // policy.Method*
	server *upstream.Server
	name   string          // tool or prompt name as the server knows it, or the URI
	args   json.RawMessage // tool arguments
	// params are what is sent upstream, with the progress token the hub's
	// own and, when rename, the name the server knows.
	params jsonrpc.Object
	rename bool
	shown  string          // the tool as the client named it, for an invalid arguments answer
	schema json.RawMessage // the tool's inputSchema, nil for none
}

// send is the end of the chain for req: it sends c upstream (the hub's
// own progress token, the name the server knows, the 2026-07-28 rounds, a
// task adopted), and turns a failure of the hub or transport during a
// tool call into an isError result.
func (h *Hub) send(ctx context.Context, req *request, c upcall) (json.RawMessage, error) {
	if req.promptAnswered {
		c.params = rounds.WithoutRound(c.params)
	}
	var buf [2]jsonrpc.Member
	set := buf[:0]
	if c.rename {
		set = append(set, jsonrpc.Member{Key: "name", Value: quote(c.name)})
	}
	meta, forget := h.mapProgress(ctx, req, c.server, c.params.Field("_meta"))
	defer forget()
	if meta != nil {
		set = append(set, jsonrpc.Member{Key: "_meta", Value: meta})
	}
	params := c.params.Bytes()
	if len(set) > 0 {
		var err error
		if params, err = c.params.With(set...); err != nil {
			return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
		}
	}
	task := c.method == policy.MethodToolsCall && c.params.Field("task") != nil
	if c.method == policy.MethodToolsCall && !task {
		req.tool = &c // its result fits max_result (fitMaxResult)
	}
	timeout := req.snap.cfg.CallTimeoutFor(c.server.Config)
	var (
		res  json.RawMessage
		conn upstream.ConnID // the connection a task is made on
		err  error
	)
	switch {
	case !task && rounds.InputMethod(c.method) && req.modern:
		res, err = h.rounds.Call(ctx, req, c.server, params, timeout)
	default:
		res, conn, err = h.obs.RequestOn(ctx, req, req.fwd.Owner, c.server, 0, c.method, json.RawMessage(params), timeout)
		if err == nil && !task && rounds.IsInputRequired(res) && !req.modern {
			res, err = h.rounds.Fulfil(ctx, req, c.server, params, res, timeout)
		}
	}
	if err == nil && task {
		res = h.tasks.Adopt(req.sess, c.server, conn, res)
	}
	if err != nil && c.method == policy.MethodToolsCall && !isUpstreamError(err) && !errors.Is(err, context.Canceled) {
		h.logger.Warn("tool call failed", "upstream", c.server.Config.ID(), "tool", c.name, "err", err)
		req.failure = err.Error()
		return toolError(err.Error()), nil
	}
	return res, err
}

// mapProgress gives the call's progress token, if its _meta has one, a
// token of the hub's own, so that progress from upstream reaches this
// call's session with the token its client chose, and two clients that
// chose the same token never see each other's progress. It returns the
// _meta to send instead (nil to send it as it is) and a func that forgets
// the mapping. Only server's progress reaches the call (see routes.Table.Notification).
func (h *Hub) mapProgress(ctx context.Context, req *request, server *upstream.Server, meta []byte) (json.RawMessage, func()) {
	if len(meta) == 0 {
		return nil, func() {}
	}
	m, err := jsonrpc.ScanObject(meta) // within the params the client sent: checked by Decode
	token := m.Field("progressToken")
	if err != nil || len(token) == 0 {
		return nil, func() {}
	}
	tok, forget := h.routes.TrackProgress(ctx, req.sess, server, bytes.Clone(token))
	q, _ := jsonrpc.Marshal(tok)
	out, err := m.With(jsonrpc.Member{Key: "progressToken", Value: q}) // the rest of _meta as the client sent it
	if err != nil {
		return nil, forget
	}
	return out, forget
}

func isUpstreamError(err error) bool {
	var ue *upstream.RPCError
	return errors.As(err, &ue)
}
