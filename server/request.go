package server

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/observe"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// request is one client request on its way through the hub: built once
// where it arrives (serve) and passed down to everything that handles it.
// The ctx beside it carries its cancellation and deadline and the spans of
// the observers that trace it. Its calls upstream are made for sess (the
// owner of upstream's Request), which picks a per-session connection and
// routes what an upstream sends during the call back to this session.
type request struct {
	hub  *Hub
	sess *session
	snap *snapshot // loaded once; its audit trail is held until the request ends
	msg  *jsonrpc.Message
	// call is the request as the chain's stages see it (server/call): its
	// session, params (Request: msg.Params scanned once, which the handlers
	// read without validating them again), era and observed call from the
	// start; once the view routed
	// it upstream (forward), the call it went as, and what the stages and
	// its hops noted on it; the audit record kept for the request
	// (Audit), whether it named something the client cannot see (Missed)
	// and how it ended (Status, set once, by finish).
	call call.Call
}

// newRequest is msg of sess, served by h under snap: the request answers
// its own call once it passed the request stages (its Handler).
func newRequest(h *Hub, sess *session, snap *snapshot, msg *jsonrpc.Message) *request {
	req := &request{hub: h, sess: sess, snap: snap, msg: msg}
	req.call = call.Call{Origin: call.Origin{Session: req, Owner: sess, Handler: req, Config: snap.cfg, Secrets: snap.secrets}}
	if msg != nil {
		req.call.ID, req.call.Method = msg.ID, msg.Method
	}
	return req
}

// Request answers one of the client's requests: the raw result, or the
// error to answer with (see jsonrpc.ToError). ctx ends when the client
// cancels the request or goes; the face answers once, and not at all when
// the client cancelled.
//
// It is the panic boundary of every face: a request whose handling panics
// is answered -32603, logged with its stack and counted (Hub.Panics),
// and every other request and session goes on.
func (s *Session) Request(ctx context.Context, msg *jsonrpc.Message) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.hub.panics.Recovered(msg.Method, p, debug.Stack())
			res, err = nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error")
		}
	}()
	if msg.Method == listen.Method {
		// Long-lived: served apart from the request path, which holds a
		// snapshot (and its audit trail) until the request ends.
		return s.hub.listens.Serve(ctx, s.sess, msg)
	}
	return s.hub.serve(ctx, s.sess, msg)
}

// serve answers one request of sess: the raw result, or the error to
// answer with (see jsonrpc.ToError). It builds the request value, and
// tells the observers the outcome the audit stage wrote (one outcome).
func (h *Hub) serve(ctx context.Context, sess *session, msg *jsonrpc.Message) (json.RawMessage, error) {
	snap := h.acquire()
	if snap.audit != nil {
		defer snap.audit.Release()
	}
	req := newRequest(h, sess, snap, msg)
	if len(msg.Params) > 0 {
		req.call.Request, _ = jsonrpc.ScanObject(msg.Params) // no object: the handlers refuse it
		st := era.StateOf(req.call.Request, msg.Params)
		req.call.Modern = st.Modern
		sess.stated(st) // before anything reads the session's capabilities
		if st.Modern {
			sess.lists.SetModern() // told of changes on its listens alone (server/listen)
		}
	}
	obs := h.obs.Observer()
	if obs != nil {
		req.call.Observed = &traffic.Call{Session: sess.id, User: sess.who.Key(), Transport: sess.transport, Protocol: sess.ProtocolVersion(), ID: msg.ID,
			Method: msg.Method, Params: msg.Params, Start: time.Now()}
		ctx = obs.CallStarted(ctx, req.call.Observed)
	}
	res, err := snap.requests.Handle(ctx, &req.call) // its audit record written (audit.Writer)
	if c := req.call.Observed; c != nil {
		finish(ctx, &req.call, res, err) // decided already when a record was written
		c.Result, c.Err, c.Status, c.Duration = res, err, req.call.Status, time.Since(c.Start)
		obs.CallEnded(ctx, c)
	}
	return res, err
}

// auditMiss keeps the audit record of a tool call that named no tool the
// client can see.
func (r *request) auditMiss(name string, args json.RawMessage) {
	if r.snap.audit != nil {
		r.call.Audit = audit.Missed(r.sess.id, name, args)
	}
}

// finish decides how c's request ended (c.Status), once: a second call
// keeps the first's decision.
func finish(ctx context.Context, c *call.Call, res json.RawMessage, err error) {
	if c.Status != "" {
		return
	}
	toolError := false
	if err == nil {
		if hop := c.HopResult; len(res) > 0 && len(res) == len(hop) && &res[0] == &hop[0] {
			toolError = c.HopToolError
		} else {
			toolError = observe.IsToolError(res)
		}
	}
	c.Status = outcome(ctx, c.Missed, toolError, err)
}

// outcome is how a request ended that was answered with err, or with a
// result that is a tool error or not: the one decision the audit trail,
// the inspector, the metrics and the traces read. missed is true for a
// request that named something the client cannot see, whatever it was
// answered with (call_dynamic_tool answers that with a tool error
// result).
func outcome(ctx context.Context, missed, toolError bool, err error) traffic.Status {
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return traffic.StatusCancelled
	case missed:
		return traffic.StatusNotFound
	case err == nil && toolError:
		return traffic.StatusToolError
	case err == nil:
		return traffic.StatusOK
	}
	var re *rpcError
	if errors.As(err, &re) {
		switch re.Code {
		case codePolicyBlocked:
			return traffic.StatusBlocked
		case codeResourceNotFound, codeMethodNotFound:
			return traffic.StatusNotFound
		}
	}
	return traffic.StatusError
}

// askedGroup notes on the request's call, if it is observed, the group a
// meta-tool the hub answers itself (get_dynamic_tools, a search of one
// group) was asked about, when the client can see it: its row in the
// inspector and its audit line then name the group, as a call's do.
func (r *request) askedGroup(v *view, group string) {
	if c := r.call.Observed; c != nil && group != "" {
		if g, _ := v.LookupGroup(group); g != nil {
			c.Group = g.Name
		}
	}
}

// miss notes that the request named nothing the client can see: its
// outcome is not_found, whatever it is answered with.
func (r *request) miss(target string) {
	r.call.Missed = true
	if c := r.call.Observed; c != nil {
		c.Target = target
	}
}

// field is the raw value of key in the request's params, nil when absent.
func (r *request) field(key string) []byte { return r.call.Request.Field(key) }

// stringField reads a string of the request's params; ok is false when
// the params are no object or the value no string.
func (r *request) stringField(key string) (string, bool) {
	return stringValue(r.call.Request.Field(key))
}

// stringValue decodes a raw JSON string; ok is false for any other value.
func stringValue(raw []byte) (string, bool) { return jsonrpc.StringValue(raw) }
