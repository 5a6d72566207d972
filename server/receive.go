package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// parseMessage applies the framing rules to one message from a client. It
// returns the message, or the error answer to send instead.
func parseMessage(line []byte) (*envelope, []byte) {
	if len(line) > 0 && line[0] == '[' {
		return nil, errorResponse(nil, errorf(codeInvalidRequest, "batch requests are not supported"))
	}
	if err := jsonrpc.Check(line, jsonrpc.MaxDepth); err != nil {
		return nil, refusal(line, err)
	}
	var msg envelope
	if err := json.Unmarshal(line, &msg); err != nil {
		return nil, errorResponse(nil, errorf(codeInvalidRequest, "Invalid Request: "+err.Error()))
	}
	switch {
	case msg.isRequest():
		if msg.JSONRPC != "2.0" {
			return nil, errorResponse(msg.ID, errorf(codeInvalidRequest, `jsonrpc must be "2.0"`))
		}
	case msg.isNotification(), hasID(msg.ID) && (len(msg.Result) > 0 || len(msg.Error) > 0):
	default:
		return nil, errorResponse(nil, errorf(codeInvalidRequest, "not a JSON-RPC request, notification or response"))
	}
	return &msg, nil
}

// refusal answers a message that broke a framing rule: -32700 when it is
// not JSON, -32600 when too deep or with a repeated key. The answer carries
// the message's id where the id itself is not in doubt.
func refusal(line []byte, err error) []byte {
	if errors.Is(err, jsonrpc.ErrNotJSON) {
		return errorResponse(nil, errorf(codeParseError, "Parse error: "+err.Error()))
	}
	var id json.RawMessage
	var ce *jsonrpc.CheckError
	if !errors.As(err, &ce) || ce.Depth != 1 || !strings.EqualFold(ce.Key, "id") {
		id = jsonrpc.IDOf(line)
	}
	return errorResponse(id, errorf(codeInvalidRequest, "Invalid Request: "+err.Error()))
}

// serveRequest answers a client's request on sess. It returns nil when the
// client cancelled the request, which then gets no answer, as the spec asks.
func (h *Hub) serveRequest(ctx context.Context, sess *session, msg *envelope, raw []byte) []byte {
	rctx, cancel := context.WithCancel(ctx)
	forget := sess.track(msg.ID, cancel)
	defer forget()
	resp := h.handle(rctx, msg, raw)
	if rctx.Err() != nil && ctx.Err() == nil {
		return nil
	}
	return resp
}

// serveNotification handles a client's notification on sess.
func (h *Hub) serveNotification(ctx context.Context, sess *session, msg *envelope, raw []byte) {
	switch msg.Method {
	case "notifications/cancelled":
		sess.cancel(msg.Params)
	case "notifications/roots/list_changed":
		h.mgr.Notify(msg.Method, nil)
	}
	h.mcp.HandleMessage(ctx, raw)
}

// serveResponse takes a client's answer to a request the hub sent it.
func (h *Hub) serveResponse(sess *session, msg *envelope) {
	if !sess.resolve(msg) {
		h.logger.Debug("response from client to no pending request", "session", sess.id, "id", string(msg.ID))
	}
}
