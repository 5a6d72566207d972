package call

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit/record"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/owner"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// Session is the client session a call is made in, as a stage may see
// it: who it is, and how an Asker reaches it, never the hub's session
// itself.
type Session interface {
	// ID is the session's id.
	ID() string
	// Caller names whose calls these are across requests: "session ID",
	// or, for a 2026-07-28 request over HTTP without Mcp-Session-Id (a
	// session that ends with the request), its identity or credential.
	Caller() string
	// UserKey is the signed-in user's key, "" when the face knows none;
	// User its name as the audit trail writes it (else its subject).
	UserKey() string
	User() string
	// Transport is the face the session came through: "stdio",
	// "streamable-http" or "sse".
	Transport() string
	// Sessionless reports whether the session is that of one request
	// over HTTP that came without Mcp-Session-Id: it ends with it.
	Sessionless() bool
	// ClientName is the client's clientInfo.name.
	ClientName() string
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Credential is the HTTP credential the session came with, "" for
	// none.
	Credential() string
	// Elicit sends the client elicitation/create with params and returns
	// its result.
	Elicit(ctx context.Context, params any) (json.RawMessage, error)
	// Capabilities are the capabilities the client states in the
	// request's _meta (2026-07-28), else those its session stated.
	Capabilities() mcp.ClientCapabilities
}

// Owner is whose calls upstream a call or hop is: an upstream.Owner (the
// client session, or a call held between rounds that owns its
// connections; types/owner), and the face that sends its caller to sign
// in to a per-user server (Linker, nil when its face cannot). Every owner
// answers both, so no stage asserts an owner to a type.
type Owner interface {
	owner.Owner
	Linker() Linker
}

// ConnID names one connection to an upstream server (upstream.ConnID).
type ConnID = owner.ConnID

// Upstream is an upstream server as the stages use it: its config, the
// protocol version it speaks, and the request itself, which the end of every hop sends (RequestOn, the
// owner explicit; see upstream.Server's, which satisfies it). The contract
// imports no upstream: a stage is handed the server, never reaches into
// it.
type Upstream interface {
	ServerConfig() *config.Server
	ProtocolVersion() string // what observers are told of a hop
	RequestOn(ctx context.Context, owner owner.Owner, on owner.ConnID, part uint64, method string, params any, timeout time.Duration) (json.RawMessage, owner.ConnID, error)
}

// Linker is how a face sends its caller to sign in to a server through
// the hub: SignInLink is a URL, single use and short-lived, bound to the
// caller, that runs the server's OAuth flow and keeps the token for that
// caller alone. The HTTP face's sessions are.
type Linker interface {
	// SignInLink is the link, and a channel closed once the caller has
	// signed in through it; then the client is told that the URL
	// elicitation elicitationID is complete (notifications/elicitation/complete).
	SignInLink(server, elicitationID string) (link string, done <-chan struct{}, err error)
}

// Call is one client request on its way through the hub: built once
// where the hub reads it, handed through the request stages (every
// request), and, once the view has routed it to an upstream as a
// tools/call, prompts/get or resources/read, through the call stages;
// read and noted on by every stage. Its context carries cancellation,
// deadlines and the observers' values (the inspector's row and the trace's
// span, obs.CallStarted; a hop's client span), and, for a caller with no
// session (Hub.Answer), its HTTP request's (the caller's identity,
// httpguard; the profile, mcphttp); never the session or the owner, which
// are the Call's own fields (Origin).
//
// Its fields are in named parts, each written at one point of the path
// and read after it: who sends it and under what (Origin, where the hub
// reads it), what the client asked (Asked, likewise), where it goes
// (Route, once the view routed it), what the policy decided (Decision)
// and what the observers are told of it (Notes), and what the end of the
// chain and the hops noted (Outcome). The parts are embedded: c.Name is
// c.Route.Name.
type Call struct {
	Origin
	Asked
	Route
	Decision policy.Decision // set by the policy stage
	Notes    Notes
	Outcome
}

// Origin is who a call is made by and under what: set where the hub reads
// the request, and the session's view once routed.
type Origin struct {
	Session Session
	// Owner is whose calls upstream this is (the client session): the
	// end of the chain passes it to upstream explicitly. Opaque to the
	// stages: those that keep what is the session's (progress, tasks)
	// are given the hub's session by the hub (the open session the owner
	// is, Owner.SessionID), never assert it from here.
	Owner Owner
	// Handler answers the request once it passed the request stages: the
	// hub's own methods, the view, and forward for a call the view routes
	// upstream. Set where the hub reads the request; every request chain
	// ends in it (End), so the hub is handed its own request explicitly,
	// never asserted from Session.
	Handler Handler
	// Config is the config of the snapshot the request is served under;
	// Secrets its secrets' redactor (Config.Secrets), nil when it
	// resolves none.
	Config  *config.Config
	Secrets *redact.Secrets
	// Observed is what the observers (inspector, metrics, traces) are
	// told of the request, nil when none watches.
	Observed  *traffic.Call
	Profile   string // the profile the session sees, "" for the whole config
	MaxResult int    // the cap on the client's tool results (max_result), 0 for none
}

// Asked is what the client sent: set where the hub reads the request.
type Asked struct {
	// ID is the request's JSON-RPC id, as the client sent it; Request
	// its params, which Decode has checked whole, scanned once (the zero
	// Object when it has none or they are no object).
	ID      json.RawMessage
	Request jsonrpc.Object
	// Method is the request's method; once routed, the method sent
	// upstream: policy.MethodToolsCall, MethodPromptsGet or
	// MethodResourcesRead.
	Method string
	// Modern is true for a request of 2026-07-28 or later.
	Modern bool
	// Refusal is why the hub does not serve what such a request states
	// in its _meta (a version it does not serve, no client capabilities),
	// decided once where the hub read the request (era.StateOf); nil when
	// it serves it, and for a request of an older era.
	Refusal *jsonrpc.Error
}

// Route is where a call goes: set once the view routed it upstream.
type Route struct {
	Upstream Upstream       // the upstream server the call goes to
	Server   *config.Server // its config
	// Name is the tool or prompt as the server knows it, or the URI (the
	// tool as the client named it is CalledName).
	Name string
	Args json.RawMessage // the tool's or prompt's arguments, nil for none
	// Params are what is sent upstream, scanned once: the request's own,
	// or those the hub built (call_dynamic_tool).
	Params jsonrpc.Object
	// Schema is the tool's inputSchema, nil for none or not a tool.
	Schema  json.RawMessage
	Timeout time.Duration // how long the upstream has to answer
	// Rename is true when Params name the tool as the client did: the end
	// of the chain sends Name instead.
	Rename bool
	// Task is true for a tools/call augmented with a task.
	Task bool
}

// Outcome is what the end of the chain and the hops upstream note for
// the stages around them and for the request's outcome (the outcome
// itself is what the chain returns).
type Outcome struct {
	// Sent is set once the end of the chain sent the call upstream: a
	// tools/call's result then fits the client's max_result (resultcap).
	Sent bool
	// Final is set when the hub's protocol answered the request
	// (clients.Protocol: the handshake, ping, an unknown method): its
	// answer is final as it is.
	Final bool
	// Meta is the _meta sent upstream in place of the client's (the
	// progress token of the hub's own, routes.Progress), nil to send it
	// as it came.
	Meta json.RawMessage
	// Conn is the connection the end of the chain sent the call on (a
	// task lives there, tasks.Stage), zero before.
	Conn ConnID
	// Failure is the hub's own failure that a tool error result reports,
	// for the audit trail.
	Failure string
	// HopResult is the result of the request's last hop upstream, when an
	// observer was told whether it is a tool error (HopToolError): the
	// request's own result is often those very bytes, not judged twice.
	HopResult    []byte
	HopToolError bool
	// Audit is the audit record kept for the request, written once it is
	// answered (audit.Writer), nil for none: built by the audit stage from
	// what the stages noted, or by the hub (a tool not found, a kept
	// result read, an agent's report).
	Audit *record.Record
	// Missed is set when the request named a tool, prompt or resource the
	// client cannot see: its outcome is not_found, whatever it is
	// answered with.
	Missed bool
	// Status is how the request ended, decided once where it is answered
	// (by the hub, for the audit trail and every observer), "" before.
	Status traffic.Status
}

// Notes record what the stages decided about a call, for its observers
// (the audit trail, the inspector, metrics): how it was decided.
type Notes struct {
	// Verdict is the decision the audit trail and the observers are told:
	// the policy's action, DecisionRateLimited or DecisionInvalidArgs;
	// "" before the policy stage.
	Verdict string
	// Grant and ApprovedBy name the grant (or "" for an approval of this
	// call alone) and the person that let the call through.
	Grant, ApprovedBy string
}

// CodeBlocked is the JSON-RPC code of a call a policy rule blocked, or
// its rate limit refused.
const CodeBlocked = -32001

// Verdicts beside the policy's actions.
const (
	// DecisionRateLimited: the call was over its rule's rate limit
	// (whether then: prompt let it through is its outcome).
	DecisionRateLimited = "rate_limited"
	// DecisionInvalidArgs: the arguments did not fit the tool's
	// inputSchema; the call was answered without going upstream.
	DecisionInvalidArgs = "invalid_args"
)

// Approved notes that a person let c through, by grant ("" for this call
// alone).
func (c *Call) Approved(grant, by string) { c.Notes.Grant, c.Notes.ApprovedBy = grant, by }

// CalledName is the tool as the client named it: the name in Params when
// they name it as the client did (Rename), else Name (call_dynamic_tool's
// name, the server's own).
func (c *Call) CalledName() string {
	if c.Rename {
		if name, ok := jsonrpc.StringValue(c.Params.Field("name")); ok {
			return name
		}
	}
	return c.Name
}

// Outgoing are the params c is sent upstream with: Params, with the name
// the server knows (Rename) and Meta spliced in, every other byte as it
// came. An error is the invalid params answer.
func (c *Call) Outgoing() (json.RawMessage, error) {
	var buf [2]jsonrpc.Member
	set := buf[:0]
	if c.Rename {
		set = append(set, jsonrpc.Member{Key: "name", Value: quote(c.Name)})
	}
	if c.Meta != nil {
		set = append(set, jsonrpc.Member{Key: "_meta", Value: c.Meta})
	}
	if len(set) == 0 {
		return c.Params.Bytes(), nil
	}
	params, err := c.Params.With(set...)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	return params, nil
}

// quote is s as a JSON string, <, > and & kept as they are (see
// jsonrpc.Marshal); a name of plain characters costs one allocation.
func quote(s string) json.RawMessage {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := jsonrpc.Marshal(s) // a string always encodes
			return q
		}
	}
	b := make([]byte, 0, len(s)+2)
	return append(append(append(b, '"'), s...), '"')
}

// Handler answers a call: the raw result, or the error to answer with.
type Handler interface {
	Handle(ctx context.Context, c *Call) (json.RawMessage, error)
}

// HandlerFunc is a func as a Handler.
type HandlerFunc func(ctx context.Context, c *Call) (json.RawMessage, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, c *Call) (json.RawMessage, error) { return f(ctx, c) }

// Stage is one concern on a call's way upstream: it answers the call
// itself or passes it to next (at most once), and may look at and change
// what comes back.
type Stage interface {
	Handle(ctx context.Context, c *Call, next Handler) (json.RawMessage, error)
}

// StageFunc is a func as a Stage.
type StageFunc func(ctx context.Context, c *Call, next Handler) (json.RawMessage, error)

// Handle calls f.
func (f StageFunc) Handle(ctx context.Context, c *Call, next Handler) (json.RawMessage, error) {
	return f(ctx, c, next)
}

// Asker puts a call to a person: nil lets it through; an *Answer answers
// the request as it is (the question itself, put in the answer); any
// other error denies the call, its text the reason. There is one per way
// of reaching a person: a grant given before, a 2026-07-28 client's
// input_required round, the client's form elicitation, the approval
// inbox.
type Asker interface {
	Ask(ctx context.Context, c *Call, d policy.Decision) error
}

// AskerFunc is a func as an Asker.
type AskerFunc func(ctx context.Context, c *Call, d policy.Decision) error

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, c *Call, d policy.Decision) error { return f(ctx, c, d) }

// ToolError is a CallToolResult with isError set, for failures of the
// hub itself during a tool call (unknown group, upstream down, arguments
// that do not fit): the LLM reads the reason and can correct itself.
func ToolError(msg string) json.RawMessage {
	b, _ := jsonrpc.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	})
	return b
}

// ToolFailures is the stage that answers a tool call the hub or its
// transport failed to make (its upstream down, crashed or too slow, a
// round that could not go on) with a ToolError result, the failure noted
// (Failure) and logged. An upstream's own JSON-RPC error, or the hub's
// (a refusal, invalid params), and a call cancelled pass as they are.
type ToolFailures struct {
	Logger *slog.Logger
}

// Handle passes c on and turns a failure to make it, if it is a tool
// call, into a ToolError result.
func (s ToolFailures) Handle(ctx context.Context, c *Call, next Handler) (json.RawMessage, error) {
	res, err := next.Handle(ctx, c)
	if err != nil && c.Method == policy.MethodToolsCall && !isRPCError(err) && !errors.Is(err, context.Canceled) {
		s.Logger.Warn("tool call failed", "upstream", c.Server.ID(), "tool", c.Name, "err", err)
		c.Failure = err.Error()
		return ToolError(err.Error()), nil
	}
	return res, err
}

// isRPCError reports whether err is a JSON-RPC error, an upstream's own
// or the hub's (its own function: the target errors.As takes would be
// made on the heap for every call, failed or not).
func isRPCError(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc)
}

// Chain is an ordered list of stages, outermost first: built once (per
// config snapshot) and linked to its end once (Then), run for each call.
// The hops' stages are linked the same way, once (Hops).
type Chain struct {
	stages []Stage
}

// New is the chain of stages, outermost first. A nil stage is left out:
// one a config does not need (see If).
func New(stages ...Stage) *Chain {
	return &Chain{stages: slices.DeleteFunc(stages, func(s Stage) bool { return s == nil })}
}

// If is s when on, else nil, which New leaves out: a concern a config
// snapshot does not have (an audit trail that is off, no rule with a
// rate) is no stage of its chain, and its calls do not pass it.
func If(on bool, s Stage) Stage {
	if !on {
		return nil
	}
	return s
}

// When is s for the calls when holds for; the others pass by it without
// entering it. Some concerns have nothing to do with most calls (a task
// to adopt when the call asks for none, a progress token to map when its
// params carry no _meta): such a stage is left off those calls' path as
// If leaves a stage out of a snapshot's chain and HopIf off a hop's.
// when reads only the call, cheaply: it runs for every call that reaches
// s, and s still decides for itself what to do with the calls it gets.
func When(when func(*Call) bool, s Stage) Stage { return callWhen{stage: s, when: when} }

// callWhen is a stage for the calls when holds for (When).
type callWhen struct {
	stage Stage
	when  func(*Call) bool
}

func (w callWhen) Handle(ctx context.Context, c *Call, next Handler) (json.RawMessage, error) {
	if !w.when(c) {
		return next.Handle(ctx, c)
	}
	return w.stage.Handle(ctx, c, next)
}

// Len is how many stages the chain has.
func (ch *Chain) Len() int { return len(ch.stages) }

// link is one stage with the handler after it.
type link struct {
	stage Stage
	next  Handler
}

func (l *link) Handle(ctx context.Context, c *Call) (json.RawMessage, error) {
	return l.stage.Handle(ctx, c, l.next)
}

// Then is the chain ending in end (the handler that sends a call
// upstream): the stages linked once, in order, so that running a call
// through it allocates nothing of its own (caddy's Compile).
func (ch *Chain) Then(end Handler) Handler {
	next := end
	for i := len(ch.stages) - 1; i >= 0; i-- {
		next = &link{stage: ch.stages[i], next: next}
	}
	return next
}

// End is the end of a request chain: the call's own Handler (Origin),
// which the hub set where it read the request.
var End Handler = HandlerFunc(func(ctx context.Context, c *Call) (json.RawMessage, error) {
	return c.Handler.Handle(ctx, c)
})

// HopHandler sends a hop: the raw result and the connection it went on,
// or the error.
type HopHandler interface {
	Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error)
}

// HopFunc is a func as a HopHandler.
type HopFunc func(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error)

// Hop calls f.
func (f HopFunc) Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error) {
	return f(ctx, h)
}

// HopStage is one concern of every request upstream: it passes the hop to
// next (once, or again when what stood in its way is gone: a sign-in),
// and may look at and change what comes back.
type HopStage interface {
	Hop(ctx context.Context, h *Hop, next HopHandler) (json.RawMessage, ConnID, error)
}

// Hops are the hop stages, outermost first, linked once to end, the
// request itself (upstream's RequestOn).
func Hops(end HopHandler, stages ...HopStage) HopHandler {
	next := end
	for i := len(stages) - 1; i >= 0; i-- {
		next = &hopLink{stage: stages[i], next: next}
	}
	return next
}

// HopIf is s for the hops when holds for; the others pass by it without
// entering it. A hop stage is of every request upstream, so a concern
// that has nothing to do with a hop (redaction under a config that
// resolves no secret, sign-in to a server without auth: per-user) is
// left off that hop's path as If leaves a stage out of a snapshot's
// chain: when reads only the hop.
func HopIf(when func(*Hop) bool, s HopStage) HopStage { return hopWhen{stage: s, when: when} }

// hopWhen is a stage for the hops when holds for (HopIf).
type hopWhen struct {
	stage HopStage
	when  func(*Hop) bool
}

func (w hopWhen) Hop(ctx context.Context, h *Hop, next HopHandler) (json.RawMessage, ConnID, error) {
	if !w.when(h) {
		return next.Hop(ctx, h)
	}
	return w.stage.Hop(ctx, h, next)
}

// hopLink is one hop stage with the handler after it.
type hopLink struct {
	stage HopStage
	next  HopHandler
}

func (l *hopLink) Hop(ctx context.Context, h *Hop) (json.RawMessage, ConnID, error) {
	return l.stage.Hop(ctx, h, l.next)
}
