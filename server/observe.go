package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
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
// that observers see it.
func (h *Hub) request(ctx context.Context, req *request, s *upstream.Server, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	cfg := h.snapshot().cfg
	if req != nil {
		cfg = req.snap.cfg
	}
	obs := h.observer()
	if obs == nil {
		res, err := s.Request(ctx, method, params, timeout)
		res, err = h.signIn(ctx, s, method, params, timeout, res, err)
		return cfg.RedactSecrets(res), redactError(cfg, err)
	}
	raw, err := jsonrpc.Params(params)
	if err != nil {
		return nil, err
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
	res, err := s.Request(ctx, method, params, timeout)
	res, err = h.signIn(ctx, s, method, params, timeout, res, err)
	// A resolved ${secret:NAME} an upstream answers with goes no further:
	// not to the client, nor to the observers (inspector, audit, traces).
	res, err = cfg.RedactSecrets(res), redactError(cfg, err)
	hop.Result, hop.Err, hop.Duration = res, err, time.Since(hop.Start)
	hop.ToolError = err == nil && method == "tools/call" && isToolError(res)
	if req != nil {
		req.hopResult, req.hopToolError = res, hop.ToolError
	}
	obs.HopEnded(ctx, hop)
	return res, err
}

// redactError is err with every resolved ${secret:NAME} in its message and
// data replaced, as in a result: an upstream's error reaches the client
// and the observers too. An error that names no secret is err itself; one
// of the hub's own that does (a transport error quoting a URL, say) keeps
// its text only.
func redactError(cfg *config.Config, err error) error {
	if err == nil {
		return nil
	}
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		if text := cfg.RedactText(err.Error()); text != err.Error() {
			return errors.New(text)
		}
		return err
	}
	out := &jsonrpc.Error{Code: e.Code, Message: cfg.RedactText(e.Message), Data: e.Data}
	if b, mErr := json.Marshal(e.Data); mErr == nil && e.Data != nil {
		if r := cfg.RedactSecrets(b); !bytes.Equal(r, b) {
			out.Data = json.RawMessage(r)
		}
	}
	if out.Message == e.Message && fmt.Sprint(out.Data) == fmt.Sprint(e.Data) {
		return err
	}
	return out
}
