package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// codePolicyBlocked answers a call a policy rule blocked.
const codePolicyBlocked = call.CodeBlocked

// send is the end of the chain for req: it sends c upstream (the hub's
// own progress token, the name the server knows, the 2026-07-28 rounds, a
// task adopted), and turns a failure of the hub or transport during a
// tool call into an isError result.
func (h *Hub) send(ctx context.Context, req *request, c *call.Call) (json.RawMessage, error) {
	sent := c.Params
	if c.FirstCall {
		sent = rounds.WithoutRound(sent)
	}
	var buf [2]jsonrpc.Member
	set := buf[:0]
	if c.Rename {
		set = append(set, jsonrpc.Member{Key: "name", Value: quote(c.Name)})
	}
	meta, forget := h.mapProgress(ctx, req.sess, c.Upstream, sent.Field("_meta"))
	defer forget()
	if meta != nil {
		set = append(set, jsonrpc.Member{Key: "_meta", Value: meta})
	}
	params := sent.Bytes()
	if len(set) > 0 {
		var err error
		if params, err = sent.With(set...); err != nil {
			return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
		}
	}
	task := c.Task
	if c.Method == policy.MethodToolsCall && !task {
		c.Sent = true // its result fits max_result (resultcap.Stage)
	}
	var (
		res  json.RawMessage
		conn upstream.ConnID // the connection a task is made on
		err  error
	)
	switch {
	case c.Modern && !task && rounds.InputMethod(c.Method):
		res, err = h.rounds.Call(ctx, c, c.Upstream, params, c.Timeout)
	default:
		res, conn, err = h.obs.RequestOn(ctx, c, c.Owner, c.Upstream, 0, c.Method, json.RawMessage(params), c.Timeout)
		if err == nil && !task && era.IsInputRequired(res) && !c.Modern {
			res, err = h.rounds.Fulfil(ctx, c, c.Upstream, params, res, c.Timeout)
		}
	}
	if err == nil && task {
		res = h.tasks.Adopt(req.sess, c.Upstream, conn, res)
	}
	if err != nil && c.Method == policy.MethodToolsCall && !isUpstreamError(err) && !errors.Is(err, context.Canceled) {
		h.logger.Warn("tool call failed", "upstream", c.Server.ID(), "tool", c.Name, "err", err)
		c.Failure = err.Error()
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
func (h *Hub) mapProgress(ctx context.Context, sess *session, server *upstream.Server, meta []byte) (json.RawMessage, func()) {
	if len(meta) == 0 {
		return nil, func() {}
	}
	m, err := jsonrpc.ScanObject(meta) // within the params the client sent: checked by Decode
	token := m.Field("progressToken")
	if err != nil || len(token) == 0 {
		return nil, func() {}
	}
	tok, forget := h.routes.TrackProgress(ctx, sess, server, bytes.Clone(token))
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
