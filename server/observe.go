package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Observe makes obs see the hub's traffic from now on (see package
// traffic); nil stops it. With no observer the hub makes no observer
// calls at all.
func (h *Hub) Observe(obs traffic.Observer) {
	if obs == nil {
		h.obs.Store(nil)
		return
	}
	h.obs.Store(&obs)
}

// observer is the hub's observer, or nil.
func (h *Hub) observer() traffic.Observer {
	if o := h.obs.Load(); o != nil {
		return *o
	}
	return nil
}

// observed answers msg like handle, telling obs about it.
func (h *Hub) observed(ctx context.Context, obs traffic.Observer, sess *session, msg *jsonrpc.Message) (json.RawMessage, error) {
	c := &traffic.Call{Session: sess.id, Transport: sess.transport, Protocol: sess.ProtocolVersion(), ID: msg.ID, Method: msg.Method,
		Params: msg.Params, Start: time.Now()}
	ctx = traffic.WithCall(obs.CallStarted(ctx, c), c)
	res, err := h.handle(ctx, msg)
	c.Result, c.Err, c.Duration = res, err, time.Since(c.Start)
	if c.Status == "" {
		c.Status = status(ctx, res, err)
	}
	obs.CallEnded(ctx, c)
	return res, err
}

// status is how a request that was answered with res or err ended.
func status(ctx context.Context, res json.RawMessage, err error) traffic.Status {
	var re *rpcError
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return traffic.StatusCancelled
	case isBlocked(err):
		return traffic.StatusBlocked
	case errors.As(err, &re) && (re.Code == codeResourceNotFound || re.Code == codeMethodNotFound):
		return traffic.StatusNotFound
	case err != nil:
		return traffic.StatusError
	case isToolError(res):
		return traffic.StatusToolError
	}
	return traffic.StatusOK
}

// routed notes on ctx's call, if it is observed, where it went and what
// the policy decided.
func (h *Hub) routed(ctx context.Context, s *upstream.Server, target, rule, action string) {
	if h.obs.Load() == nil {
		return
	}
	if c := traffic.CallOf(ctx); c != nil {
		c.Group, c.Server, c.Target, c.Rule, c.Action = s.Config.Group, s.Config.Name, target, rule, action
	}
}

// missed notes that ctx's call, if it is observed, named nothing there is.
func (h *Hub) missed(ctx context.Context, target string) {
	if h.obs.Load() == nil {
		return
	}
	if c := traffic.CallOf(ctx); c != nil {
		c.Target, c.Status = target, traffic.StatusNotFound
	}
}

// request sends one request to an upstream server for ctx's call: every
// hop to an upstream goes through here, so that observers see it.
func (h *Hub) request(ctx context.Context, s *upstream.Server, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	obs := h.observer()
	if obs == nil {
		return s.Request(ctx, method, params, timeout)
	}
	raw, err := jsonrpc.Params(params)
	if err != nil {
		return nil, err
	}
	hop := &traffic.Hop{Group: s.Config.Group, Server: s.Config.Name, Transport: string(s.Config.Transport),
		Protocol: s.Status().ProtocolVersion, Method: method, Params: raw, Start: time.Now()}
	ctx = obs.HopStarted(ctx, hop)
	params = nil // none sent when there are none, never "params": null
	if hop.Params != nil {
		params = hop.Params
	}
	res, err := s.Request(ctx, method, params, timeout)
	hop.Result, hop.Err, hop.Duration = res, err, time.Since(hop.Start)
	obs.HopEnded(ctx, hop)
	return res, err
}
