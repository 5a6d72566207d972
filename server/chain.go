package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/observe"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy/gate"
	"github.com/dynamic-mcp/dynamic-mcp/server/ratelimit"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/server/validateargs"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// The call chain (issue 32): what a tools/call, prompts/get or
// resources/read goes through once the view has routed it, outermost
// first. This list is the one place its order is written; the hub builds
// it per config snapshot (newChain), so a reload runs new calls through a
// new chain, swapped whole with the snapshot, while calls in flight finish
// on theirs. The end of the chain (send) sends the call upstream with its
// owner.
//
//	audit      admit the call; build its record once the decision is known
//	validate   the tool's arguments against its inputSchema
//	policy     the rules' decision
//	rate limit the decision's rule's rate
//	observe    the decision, for the inspector, metrics and traces
//	enforce    allow, log, deny, or put the call to a person (an Asker)
//	upstream   rounds, tasks, progress, the request itself (send)
//
// The 2026-07-28 decoration, the result budget (fitMaxResult) and the
// writing of the audit record follow in handle and serve, which see every
// method's answer.
func (h *Hub) newChain(snap *snapshot) call.Handler {
	return call.New(
		audit.Stage{Trail: snap.audit, Keep: keepAudit},
		&validateargs.Stage{Schemas: &h.argSchemas, Config: snap.cfg, Logger: h.logger},
		gate.Decide{Policy: snap.policy},
		&ratelimit.Stage{Limiter: h.rates, Asker: h.asker(snap.cfg), Answers: rounds.Round{Rounds: h.rounds, Request: roundRequest}.Answers, Logger: h.logger},
		observe.Stage{Of: observed},
		&gate.Enforce{Asker: h.asker(snap.cfg), Logger: h.logger},
	).Then(call.HandlerFunc(h.sendCall))
}

// requestOf is the hub's request a call of the chain was made for. The
// stages still written as Hub code read it; each goes when its concern
// moves to a package of its own and reads the Call alone.
func requestOf(c *call.Call) *request { return c.Session.(*request) }

// forward sends c through the snapshot's chain to its upstream, and
// leaves the audit record for serve to write once the request's outcome
// is known. A failure of the hub or transport during a tool call is an
// isError result.
func (h *Hub) forward(ctx context.Context, req *request, c upcall) (json.RawMessage, error) {
	req.server = c.server
	_, retry := req.stringField("requestState")
	req.fwd = call.Call{Session: req, Owner: req.sess, Method: c.method, Server: c.server.Config, Name: c.name,
		ClientName: c.shown, Args: c.args, Params: c.params, Rename: c.rename, Schema: c.schema,
		Task: c.method == policy.MethodToolsCall && c.params.Field("task") != nil, Modern: req.modern, Retry: retry,
		Profile: req.sess.profileName(req.snap.cfg), Timeout: req.snap.cfg.CallTimeoutFor(c.server.Config)}
	cc := &req.fwd // in the request: no allocation of its own
	return req.snap.chain.Handle(ctx, cc)
}

// sendCall is the end of the chain: c sent upstream (send).
func (h *Hub) sendCall(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	req := requestOf(c)
	return h.send(ctx, req, req.upcall(c))
}

// keepAudit keeps the audit record of c for serve, which writes it with
// the request's outcome.
func keepAudit(c *call.Call, r *audit.Record) { requestOf(c).audit = r }

// clippedMark ends a string the hub cut, as the audit trail's do.
const clippedMark = audit.ClippedMark

// upcall is the hub's view of c, on its way to req.server.
func (r *request) upcall(c *call.Call) upcall {
	return upcall{method: c.Method, server: r.server, name: c.Name, shown: c.ClientName, args: c.Args, params: c.Params,
		rename: c.Rename, schema: c.Schema}
}

// The call.Session of a call is its request's session.

func (r *request) ID() string         { return r.sess.id }
func (r *request) Caller() string     { return caller(r.sess) }
func (r *request) UserKey() string    { return r.sess.who.Key() }
func (r *request) Transport() string  { return r.sess.transport }
func (r *request) Sessionless() bool  { return sessionless(r.sess) }
func (r *request) ClientName() string { return r.sess.GetClientInfo().Name }

// observed is the call the observers watch for c's request, nil when
// none watches.
func observed(c *call.Call) *traffic.Call { return requestOf(c).call }

// asker puts a call to a person in whichever way its client can be
// reached (approve.Ways), asked under cfg.
func (h *Hub) asker(cfg *config.Config) call.Asker {
	client := func(c *call.Call) approve.Client { return requestOf(c) }
	inbox := approve.Wait{Inbox: h.inbox, Config: cfg, Client: client}
	return approve.Ways{Config: cfg, Client: client, Grant: approve.Grant{Inbox: h.inbox},
		Round:  rounds.Round{Rounds: h.rounds, Config: cfg, Request: roundRequest, Inbox: inbox},
		Elicit: approve.Elicit{Config: cfg, Client: client},
		Inbox:  inbox}
}

// roundRequest is the request a call of the chain was made for, as the
// 2026-07-28 rounds see it.
func roundRequest(c *call.Call) rounds.Request { return requestOf(c) }

// The approve.Client of a call is its request's session.

func (r *request) CanElicit() bool {
	return routes.CanElicit(r.sess.GetClientCapabilities().Elicitation, "")
}
func (r *request) Credential() string { return r.sess.Client() }
func (r *request) Elicit(ctx context.Context, params any) (json.RawMessage, error) {
	return r.sess.Request(ctx, "elicitation/create", params)
}

// The rounds.Request of a call is its request.

func (r *request) Call() *call.Call                 { return &r.fwd }
func (r *request) Param(key string) json.RawMessage { return r.params.Field(key) }
func (r *request) SignIn() (string, rounds.Linker)  { return r.sess.UserKey(), r.sess.linker }

// FirstCall makes the request go upstream without the round's
// requestState and inputResponses: the retry that answered the hub's
// question accept.
func (r *request) FirstCall() {
	r.params = rounds.WithoutRound(r.params)
	r.promptAnswered = true
}

// Capabilities are the capabilities the client states in the request's
// _meta (2026-07-28), else those its session stated.
func (r *request) Capabilities() mcp.ClientCapabilities {
	if meta, err := jsonrpc.ScanObject(r.field("_meta")); err == nil {
		if raw := meta.Field(mcp.MetaKeyClientCapabilities); raw != nil {
			var caps mcp.ClientCapabilities
			if json.Unmarshal(raw, &caps) == nil {
				return clients.BoundCapabilities(caps)
			}
		}
	}
	return r.sess.GetClientCapabilities()
}
