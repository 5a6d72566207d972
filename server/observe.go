package server

import (
	"context"
	"encoding/json"
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

// routed notes on the request's call, if it is observed, where it went
// and what the policy decided.
func (h *Hub) routed(req *request, s *upstream.Server, target, rule, action string) {
	if c := req.call; c != nil {
		c.Group, c.Server, c.Target, c.Rule, c.Action = s.Config.Group, s.Config.Name, target, rule, action
	}
}

// askedGroup notes on the request's call, if it is observed, the group a
// meta-tool the hub answers itself (get_dynamic_tools, a search of one
// group) was asked about, when the client can see it: its row in the
// inspector and its audit line then name the group, as a call's do.
func (h *Hub) askedGroup(req *request, v *view, group string) {
	if c := req.call; c != nil && group != "" {
		if g, _ := v.LookupGroup(group); g != nil {
			c.Group = g.Name
		}
	}
}

// missed notes that the request named nothing the client can see: its
// outcome is not_found, whatever it is answered with.
func (h *Hub) missed(req *request, target string) {
	req.missed = true
	if c := req.call; c != nil {
		c.Target = target
	}
}

// request sends one request to an upstream server for req (nil for work
// of no client's request): every hop to an upstream goes through here, so
// that observers see it, and so that no resolved ${secret:NAME} in what an
// upstream answers goes further: not to the client, nor to the observers
// (inspector, audit, traces). Results are redacted too, decided here for
// every hop: a tool that echoes its key, raw or in JSON-in-text at any
// depth (config.RedactSecrets), would otherwise hand it to the client's
// model; a value of six bytes or more is rare enough in a result by
// chance.
func (h *Hub) request(ctx context.Context, req *request, owner any, s *upstream.Server, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	res, _, err := h.requestOn(ctx, req, owner, s, 0, method, params, timeout)
	return res, err
}

// requestOn is request sent only on the connection on (zero: any; see
// upstream's RequestOn), and the connection it went on. owner is whose
// call it is (see upstream's Request): the client session, a held call
// that owns its connections, or nil for the server's shared connection.
func (h *Hub) requestOn(ctx context.Context, req *request, owner any, s *upstream.Server, on upstream.ConnID, method string, params any, timeout time.Duration) (json.RawMessage, upstream.ConnID, error) {
	cfg := h.snapshot().cfg
	if req != nil {
		cfg = req.snap.cfg
	}
	obs := h.observer()
	if obs == nil {
		res, conn, err := s.RequestOn(ctx, owner, on, method, params, timeout)
		res, conn, err = h.signIn(ctx, owner, s, on, method, params, timeout, res, conn, err)
		return cfg.RedactSecrets(res), conn, upstream.RedactError(cfg, err)
	}
	raw, err := jsonrpc.Params(params)
	if err != nil {
		return nil, 0, err
	}
	hop := &traffic.Hop{Group: s.Config.Group, Server: s.Config.Name, Transport: string(s.Config.Transport),
		Protocol: s.Status().ProtocolVersion, Method: method, Params: raw, Start: time.Now()}
	if req != nil {
		hop.Call = req.call
	}
	ctx = obs.HopStarted(ctx, hop)
	params = nil // none sent when there are none, never "params": null
	if hop.Params != nil {
		params = hop.Params
	}
	res, conn, err := s.RequestOn(ctx, owner, on, method, params, timeout)
	res, conn, err = h.signIn(ctx, owner, s, on, method, params, timeout, res, conn, err)
	// Redacted before the observers see it.
	res, err = cfg.RedactSecrets(res), upstream.RedactError(cfg, err)
	hop.Result, hop.Err, hop.Duration = res, err, time.Since(hop.Start)
	hop.ToolError = err == nil && method == "tools/call" && isToolError(res)
	if req != nil {
		req.hopResult, req.hopToolError = res, hop.ToolError
	}
	obs.HopEnded(ctx, hop)
	return res, conn, err
}
