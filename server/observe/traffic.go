package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Traffic is the hub's traffic as its observers see it: the observer
// Observe set, and every hop to an upstream, which Request sends.
type Traffic struct {
	obs atomic.Pointer[traffic.Observer] // set by Observe; nil: no observer calls
	// Config is the hub's current config, for a hop of no client's
	// request.
	Config func() *config.Config
	// SignIn is what the hub makes of a hop's answer that says the caller
	// must sign in to s (the hub's signIn, peruser.go).
	SignIn func(ctx context.Context, owner any, s *upstream.Server, on upstream.ConnID, method string, params any, timeout time.Duration,
		res json.RawMessage, conn upstream.ConnID, err error) (json.RawMessage, upstream.ConnID, error)
}

// Origin is the client's request a hop is sent for.
type Origin interface {
	// Observed is its observed call, nil when none watches.
	Observed() *traffic.Call
	// Config is the config of its snapshot.
	Config() *config.Config
	// HopEnded notes the result of its hop, when an observer was told
	// whether it is a tool error (toolError).
	HopEnded(res []byte, toolError bool)
}

// Observe makes obs see the hub's traffic from now on (see package
// traffic); nil stops it. With no observer the hub makes no observer
// calls at all.
func (t *Traffic) Observe(obs traffic.Observer) {
	if obs == nil {
		t.obs.Store(nil)
		return
	}
	t.obs.Store(&obs)
}

// Observer is the hub's observer, or nil.
func (t *Traffic) Observer() traffic.Observer {
	if o := t.obs.Load(); o != nil {
		return *o
	}
	return nil
}

// Routed notes on c, an observed call (nil: none), where it went and what
// the policy decided.
func Routed(c *traffic.Call, s *upstream.Server, target, rule, action string) {
	if c != nil {
		c.Group, c.Server, c.Target, c.Rule, c.Action = s.Config.Group, s.Config.Name, target, rule, action
	}
}

// Request sends one request to an upstream server for req (nil for work
// of no client's request): every hop to an upstream goes through here, so
// that observers see it, and so that no resolved ${secret:NAME} in what an
// upstream answers goes further: not to the client, nor to the observers
// (inspector, audit, traces). Results are redacted too, decided here for
// every hop: a tool that echoes its key, raw or in JSON-in-text at any
// depth (config.RedactSecrets), would otherwise hand it to the client's
// model; a value of six bytes or more is rare enough in a result by
// chance.
func (t *Traffic) Request(ctx context.Context, req Origin, owner any, s *upstream.Server, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	res, _, err := t.RequestOn(ctx, req, owner, s, 0, method, params, timeout)
	return res, err
}

// RequestOn is Request sent only on the connection on (zero: any; see
// upstream's RequestOn), and the connection it went on. owner is whose
// call it is (see upstream's Request): the client session, a held call
// that owns its connections, or nil for the server's shared connection.
func (t *Traffic) RequestOn(ctx context.Context, req Origin, owner any, s *upstream.Server, on upstream.ConnID, method string, params any, timeout time.Duration) (json.RawMessage, upstream.ConnID, error) {
	var cfg *config.Config
	if req != nil {
		cfg = req.Config()
	} else {
		cfg = t.Config()
	}
	obs := t.Observer()
	if obs == nil {
		res, conn, err := s.RequestOn(ctx, owner, on, method, params, timeout)
		res, conn, err = t.SignIn(ctx, owner, s, on, method, params, timeout, res, conn, err)
		return cfg.RedactSecrets(res), conn, upstream.RedactError(cfg, err)
	}
	raw, err := jsonrpc.Params(params)
	if err != nil {
		return nil, 0, err
	}
	hop := &traffic.Hop{Group: s.Config.Group, Server: s.Config.Name, Transport: string(s.Config.Transport),
		Protocol: s.Status().ProtocolVersion, Method: method, Params: raw, Start: time.Now()}
	if req != nil {
		hop.Call = req.Observed()
	}
	ctx = obs.HopStarted(ctx, hop)
	params = nil // none sent when there are none, never "params": null
	if hop.Params != nil {
		params = hop.Params
	}
	res, conn, err := s.RequestOn(ctx, owner, on, method, params, timeout)
	res, conn, err = t.SignIn(ctx, owner, s, on, method, params, timeout, res, conn, err)
	// Redacted before the observers see it.
	res, err = cfg.RedactSecrets(res), upstream.RedactError(cfg, err)
	hop.Result, hop.Err, hop.Duration = res, err, time.Since(hop.Start)
	hop.ToolError = err == nil && method == "tools/call" && IsToolError(res)
	if req != nil {
		req.HopEnded(res, hop.ToolError)
	}
	obs.HopEnded(ctx, hop)
	return res, conn, err
}

// IsToolError reports whether a result has isError set: a tools/call that
// failed with a result the LLM reads. Results are valid JSON (an
// upstream's, which its connection checked, or the hub's own).
func IsToolError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	o, err := jsonrpc.ScanObject(res)
	return err == nil && string(o.Field("isError")) == "true"
}
