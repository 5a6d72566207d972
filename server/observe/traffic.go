// Package observe is the observers' stage of the call chain: it tells
// the traffic observers (the inspector, metrics, traces) where a call
// goes and what the policy and rate limit decided, before the decision is
// enforced, so that a call that waits for a person, or is denied, shows
// where it was going. It imports the call contract and types/traffic,
// never the hub: the observed call is made where the hub reads the
// request, for every method, and carried on its Call (Call.Observed).
//
// It holds the hub's observer too (Traffic), and sends every hop to an
// upstream, so that the observers see each one (Traffic.Request): a
// call's own at the end of the call chain (Traffic.Send).
package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Stage notes on a call's observed call where it goes and what was
// decided.
type Stage struct{}

// Handle notes on c's observed call (Call.Observed), if any, and passes c
// on.
func (Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if o := c.Observed; o != nil {
		o.Group, o.Server, o.Target, o.Rule, o.Action = c.Server.Group, c.Server.Name, c.Name, c.Decision.Rule, c.Notes.Verdict
	}
	return next.Handle(ctx, c)
}

// Traffic is the hub's traffic as its observers see it: the observer
// Observe set, and every hop to an upstream, which Request sends.
type Traffic struct {
	obs atomic.Pointer[traffic.Observer] // set by Observe; nil: no observer calls
	// Config is the hub's current config, for a hop of no client's
	// request.
	Config func() *config.Config
	// Hops are what every request upstream goes through inside the
	// observers' view of it (call.HopStage: sign-in, redaction), ending in
	// the request itself.
	Hops call.HopHandler
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

// Request sends one request to an upstream server for the client's
// request c (nil for work of no client's request): every hop to an
// upstream goes through here, so that observers see it, once it passed
// the hop stages (Hops: per-user sign-in, and redaction, so that no
// resolved ${secret:NAME} in what an upstream answers reaches the client
// or the observers).
func (t *Traffic) Request(ctx context.Context, c *call.Call, owner call.Owner, s call.Upstream, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	res, _, err := t.RequestOn(ctx, c, owner, s, 0, method, params, timeout)
	return res, err
}

// Send is the end of the call chain: c sent upstream with its params
// (Call.Outgoing) for its owner, as one hop (RequestOn), noted Sent and
// on the connection it went on (Call.Conn).
func (t *Traffic) Send(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	params, err := c.Outgoing()
	if err != nil {
		return nil, err
	}
	c.Sent = true // a tool's result fits max_result (resultcap.Stage)
	res, conn, err := t.RequestOn(ctx, c, c.Owner, c.Upstream, 0, c.Method, params, c.Timeout)
	c.Conn = conn
	return res, err
}

// RequestOn is Request sent only on the connection on (zero: any; see
// upstream's RequestOn), and the connection it went on. owner is whose
// call it is (see upstream's Request): the client session, a held call
// that owns its connections, or nil for the server's shared connection.
// The hop is observed as c's, and its result noted on c (HopResult).
func (t *Traffic) RequestOn(ctx context.Context, c *call.Call, owner call.Owner, s call.Upstream, on call.ConnID, method string, params any, timeout time.Duration) (json.RawMessage, call.ConnID, error) {
	hp := call.Hop{Call: c, Owner: owner, Server: s, On: on, Method: method, Params: params, Timeout: timeout}
	if t.Observer() == nil {
		// None watches (a desktop's hub without --ui): the hop alone,
		// without the room for what observers are shown.
		alone := new(call.Hop)
		*alone = hp
		return t.hop(ctx, alone, nil)
	}
	p := &observedHop{hp: hp}
	return t.hop(ctx, &p.hp, &p.seen)
}

// observedHop is a hop and what the observers are shown of it, made
// together: an allocation a hop less.
type observedHop struct {
	hp   call.Hop
	seen traffic.Hop
}

// Hop sends hp, under its call's config (the hub's current one for a hop
// of no client's request), through the hop stages (Hops) inside the
// observers' view of it: the outermost call.HopHandler of every hop.
func (t *Traffic) Hop(ctx context.Context, hp *call.Hop) (json.RawMessage, call.ConnID, error) {
	return t.hop(ctx, hp, nil)
}

// hop is Hop with the room for what the observers are shown (nil: made
// here).
func (t *Traffic) hop(ctx context.Context, hp *call.Hop, seen *traffic.Hop) (json.RawMessage, call.ConnID, error) {
	c, s, method, params := hp.Call, hp.Server, hp.Method, hp.Params
	if c != nil {
		hp.Config, hp.Secrets = c.Config, c.Secrets
	} else {
		hp.Config = t.Config()
		hp.Secrets = hp.Config.Secrets()
	}
	obs := t.Observer()
	if obs == nil {
		return t.Hops.Hop(ctx, hp)
	}
	raw, err := jsonrpc.Params(params)
	if err != nil {
		return nil, 0, err
	}
	sc := s.ServerConfig()
	hop := seen
	if hop == nil {
		hop = new(traffic.Hop)
	}
	*hop = traffic.Hop{Group: sc.Group, Server: sc.Name, Transport: string(sc.Transport),
		Protocol: s.ProtocolVersion(), Method: method, Params: raw, Start: time.Now()}
	if c != nil {
		hop.Call = c.Observed
	}
	ctx = obs.HopStarted(ctx, hop)
	switch p, ok := params.(json.RawMessage); {
	case hop.Params == nil:
		hp.Params = nil // none sent when there are none, never "params": null
	case ok && len(p) > 0 && len(p) == len(hop.Params) && &p[0] == &hop.Params[0]:
		// Sent as they came, no observer changed them (HopStarted may:
		// a trace's context): not made an interface value again (an
		// allocation a hop).
	default:
		hp.Params = hop.Params
	}
	res, conn, err := t.Hops.Hop(ctx, hp) // redacted before the observers see it
	hop.Result, hop.Err, hop.Duration = res, err, time.Since(hop.Start)
	hop.ToolError = err == nil && method == "tools/call" && IsToolError(res)
	if c != nil {
		c.HopResult, c.HopToolError = res, hop.ToolError
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
