// Package traffic is what the hub tells its observers (the live
// inspector, Prometheus metrics, OpenTelemetry traces) about the messages
// it passes, and nothing more. The hub calls an Observer at fixed points
// of a client's request: when it arrives, for each hop to an upstream,
// for each message an upstream sends during it, and when it is answered.
// With no observer the hub makes none of these calls, so watching costs
// the hot path nothing when nobody watches.
//
// Observers run on the request's goroutine: they must not block, and they
// must copy what they keep, for the byte slices they are shown belong to
// the hub and are only valid during the call.
//
// The hub decides how a request ended once (Call.Status) and every
// observer reads that decision; so too whether a hop's result is a tool
// error (Hop.ToolError).
package traffic

import (
	"context"
	"encoding/json"
	"time"
)

// Status is how a client's request ended.
type Status string

// The statuses of a request, as the inspector and the metrics show them.
const (
	StatusOK        Status = "ok"
	StatusToolError Status = "tool_error" // a tools/call result with isError
	StatusError     Status = "error"      // a JSON-RPC error
	StatusBlocked   Status = "blocked"    // a policy rule denied it
	StatusNotFound  Status = "not_found"  // no such tool, prompt or resource
	StatusCancelled Status = "cancelled"  // the client cancelled or left
	// StatusNoClient is a server's request to the client (roots/list at
	// start, say) that the hub answered itself, as no client could: none
	// connected, or it does not support the method. Not a failure.
	StatusNoClient Status = "no_client"
)

// Call is one request of a client, from its arrival to its answer. The hub
// fills it in as the request goes: the first block when it arrives, the
// routing and the policy decision while it is handled, the outcome when
// it is answered.
type Call struct {
	Session   string          // the client session's id
	User      string          // the caller's key (jwt:SUBJECT, token:NAME), "" where the face knows none
	Transport string          // how the client is connected: "stdio", "streamable-http" or "sse"
	Protocol  string          // the protocol version the session negotiated; "" before initialize
	ID        json.RawMessage // the request's id, as the client sent it
	Method    string
	// Params are as the client sent them, nil when it sent none: valid
	// JSON, checked whole when the message was decoded (see
	// jsonrpc.Decode), so an observer may read them with
	// jsonrpc.ScanObject without validating them again.
	Params json.RawMessage
	Start  time.Time

	// Routing, where the request went to an upstream: the group and
	// server, and the tool, prompt or resource URI as the client named it
	// (a meta-tool's call names the group's tool). The hub's own answers
	// (initialize, lists, get_dynamic_tools) leave them empty.
	Group, Server, Target string
	// The policy decision, where one was made: the rule (empty for the
	// default) and its action (allow, deny, log, prompt).
	Rule, Action string

	// The outcome: the result's bytes or the error answered, and how the
	// request ended, decided once by the hub for the audit trail and every
	// observer.
	Result   json.RawMessage
	Err      error
	Status   Status
	Duration time.Duration
}

// Hop is one request the hub sends an upstream server on behalf of a Call.
type Hop struct {
	Call          *Call // the client's request it is made for; nil for the hub's own
	Group, Server string
	Transport     string // the upstream's: stdio, streamable-http or sse
	Protocol      string // the protocol version negotiated with it
	Method        string
	// Params are what is sent. An observer's HopStarted may replace them,
	// for example to pass a trace context on in _meta; the hub sends
	// whatever Params holds when HopStarted returns.
	Params json.RawMessage
	Start  time.Time

	Result    json.RawMessage
	Err       error
	ToolError bool // a tools/call result with isError set
	Duration  time.Duration
}

// Direction says which way a Message went through the hub.
type Direction string

// The directions of a Message.
const (
	FromClient   Direction = "from_client"   // a client's notification
	FromUpstream Direction = "from_upstream" // an upstream's notification or request
)

// Message is a notification, or a request an upstream sends the client
// (sampling, elicitation, roots), with its answer once there is one. When
// the hub knows the Call it came during, the context the observer is given
// derives from the one CallStarted returned for that call.
type Message struct {
	Direction Direction
	Session   string // the client session, where there is one
	Server    string // the upstream server, where there is one
	Method    string
	Params    json.RawMessage
	Request   bool // a request (answered by Result or Err), not a notification

	Result   json.RawMessage
	Err      error
	Duration time.Duration
	// NoClient says the hub answered Err itself: no client could take the
	// request (see StatusNoClient).
	NoClient bool
}

// Observer is told about the hub's traffic. Each Started is followed by
// exactly one Ended with the same value, on the same goroutine.
type Observer interface {
	// CallStarted is called when a client's request arrives, before it is
	// handled; the request runs in the context it returns (an observer may
	// add a span to it).
	CallStarted(ctx context.Context, c *Call) context.Context
	// CallEnded is called once the request's answer is known.
	CallEnded(ctx context.Context, c *Call)
	// HopStarted is called before a request goes upstream; the hop runs in
	// the context it returns.
	HopStarted(ctx context.Context, h *Hop) context.Context
	// HopEnded is called when the hop has its answer or failed.
	HopEnded(ctx context.Context, h *Hop)
	// Message is called for a notification as it passes, and for a request
	// of an upstream's once it is answered.
	Message(ctx context.Context, m *Message)
}

// Tee is an Observer that tells each of obs in turn; nil ones are skipped.
// It returns nil when none is left, so that the hub makes no calls.
func Tee(obs ...Observer) Observer {
	var t tee
	for _, o := range obs {
		if o != nil {
			t = append(t, o)
		}
	}
	switch len(t) {
	case 0:
		return nil
	case 1:
		return t[0]
	}
	return t
}

type tee []Observer

func (t tee) CallStarted(ctx context.Context, c *Call) context.Context {
	for _, o := range t {
		ctx = o.CallStarted(ctx, c)
	}
	return ctx
}

func (t tee) CallEnded(ctx context.Context, c *Call) {
	for _, o := range t {
		o.CallEnded(ctx, c)
	}
}

func (t tee) HopStarted(ctx context.Context, h *Hop) context.Context {
	for _, o := range t {
		ctx = o.HopStarted(ctx, h)
	}
	return ctx
}

func (t tee) HopEnded(ctx context.Context, h *Hop) {
	for _, o := range t {
		o.HopEnded(ctx, h)
	}
}

func (t tee) Message(ctx context.Context, m *Message) {
	for _, o := range t {
		o.Message(ctx, m)
	}
}
