package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/observe"
	"github.com/dynamic-mcp/dynamic-mcp/server/peruser"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy/gate"
	"github.com/dynamic-mcp/dynamic-mcp/server/ratelimit"
	"github.com/dynamic-mcp/dynamic-mcp/server/redaction"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/server/tasks"
	"github.com/dynamic-mcp/dynamic-mcp/server/validateargs"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// The chain (issue 32): what a client's request goes through, outermost
// first. These lists are the one place its order is written.
//
// Every request passes the request stages (newRequestChain, built per
// config snapshot with its call stages), then its own Handle, where the
// view routes it:
//
//	audit          the record kept for the request written once it is answered,
//	               with the outcome the observers are told (server/audit Writer;
//	               left out when the trail is off)
//	result budget  a tool's result cut to the client's max_result (server/resultcap),
//	               outside the decoration: it bounds the bytes the client gets;
//	               left out when the config caps no client's results
//	era            2026-07-28 checks, and the answer told as that era tells it (server/era)
//	end            the request's own Handle (its Call's Handler, call.End): the
//	               hub's own methods, the view (name -> route), the protocol's
//
// A tools/call, prompts/get or resources/read the view routed upstream
// (forward) then passes the call stages. The hub builds them per config
// snapshot (newChain), so a reload runs new calls through a new chain,
// swapped whole with the snapshot, while calls in flight finish on
// theirs; a concern the snapshot's config does not have (the audit trail
// off, no rule with a rate) is left out of it (call.If). The end of the chain (observe.Traffic.Send) sends the call
// upstream with its owner, as one hop (newHopChain).
//
//	audit      admit the call; build its record once the decision is known,
//	           kept on the call for the request stage to write (Call.Audit)
//	validate   the tool's arguments against its inputSchema
//	policy     the rules' decision
//	rate limit the decision's rule's rate
//	observe    the decision, for the inspector, metrics and traces
//	enforce    allow, log, deny, or put the call to a person (an Asker)
//	failures   the hub's failure to make a tool call, an isError result (call.ToolFailures)
//	progress   the client's progress token, one of the hub's upstream (server/routes);
//	           a call whose params have no _meta passes by (call.When)
//	tasks      the task a call made, adopted under an id of the hub's (server/tasks);
//	           a call that asks for no task passes by
//	rounds     the 2026-07-28 rounds: a call held, relayed or fulfilled (server/rounds)
//	send       the request itself, as one hop (observe.Traffic.Send)
func (h *Hub) newRequestChain(snap *snapshot) call.Handler {
	return call.New(
		call.If(snap.audit != nil, audit.Writer{Trail: snap.audit, Outcome: outcomeOf}),
		call.If(snap.cfg.CapsResults(), resultcap.Stage{Store: h.results}),
		era.Stage{},
	).Then(call.End) // the request's own Handle (request.go)
}

// newChain is the call stages of snap (see newRequestChain).
func (h *Hub) newChain(snap *snapshot) call.Handler {
	return call.New(
		call.If(snap.audit != nil, audit.Stage{Trail: snap.audit}),
		validateargs.NewStage(&h.argSchemas, snap.cfg, h.logger),
		gate.NewDecide(snap.policy),
		call.If(snap.policy.Limits(), &ratelimit.Stage{Limiter: h.rates, Asker: h.asker(snap.cfg), Answers: rounds.Round{Rounds: h.rounds}.Answers, Logger: h.logger}),
		observe.Stage{},
		&gate.Enforce{Asker: h.asker(snap.cfg), Logger: h.logger},
		call.ToolFailures{Logger: h.logger},
		call.When(hasMeta, routes.Progress[client]{Table: h.routes, Session: sessionIn(h.routes)}),
		call.When(asksTask, tasks.Stage[client]{Table: h.tasks, Session: sessionIn(h.routes)}),
		rounds.Stage{Rounds: h.rounds},
	).Then(call.HandlerFunc(h.obs.Send))
}

// hasMeta and asksTask say which calls the progress and tasks stages
// are for (call.When): a progress token is in the params' _meta, and a
// call that asks for no task makes none to adopt.
func hasMeta(c *call.Call) bool  { return len(c.Params.Field("_meta")) > 0 }
func asksTask(c *call.Call) bool { return c.Task }

// newHopChain is what every request to an upstream goes through, whoever
// sends it (the end of the call stages, a completion, a 2026-07-28 round,
// an unsubscribe), outermost first, inside the observers' view of the hop
// (observe.Traffic), which see its answer once it passed them all:
//
//	redaction  no resolved ${secret:NAME} goes further than the hop (server/redaction);
//	           a hop under a config that resolves none passes by
//	sign-in    auth: per-user: the caller sent to sign in, then the hop again (server/peruser);
//	           a hop to any other server passes by (upstream asks no one else to sign in)
//	upstream   upstream.Server.RequestOn, the owner explicit
//
// ask passes the sign-in's question to the client (routes.Table.Request).
func newHopChain(ask func(context.Context, routes.ServerRequest) (json.RawMessage, error)) call.HopHandler {
	return call.Hops(call.HopFunc(sendHop),
		call.HopIf(func(h *call.Hop) bool { return h.Secrets != nil }, redaction.Stage{}),
		// config.Server.PerUser's test written out: every hop asks it,
		// and it was all a hop entered that file for.
		call.HopIf(func(h *call.Hop) bool { return h.Server.ServerConfig().Auth == config.AuthPerUser }, peruser.Stage{Ask: ask}),
	)
}

// sendHop is the end of every hop: the request itself.
func sendHop(ctx context.Context, h *call.Hop) (json.RawMessage, call.ConnID, error) {
	return h.Server.RequestOn(ctx, h.Owner, h.On, h.Part, h.Method, h.Params, h.Timeout)
}

// sessionIn is, in the session table t, the hub's session a call is made
// in, for the stages that keep something of the session's (progress,
// tasks) in the hub's tables: the open session the call's owner is
// (routes.Table.Of), nil once it ended. No stage reaches the request.
func sessionIn(t *routes.Table[client]) func(c *call.Call) client {
	return func(c *call.Call) client { s, _ := t.Of(c.Owner); return s }
}

// forward sends the request through the snapshot's call stages as method
// (policy.Method*) to r's upstream (the route the view found: Upstream,
// Name, Args, Params, Rename, Schema; forward sets the rest),
// as its Call routed there, and leaves the audit record for the trail's
// request stage (audit.Writer) to write once the request's outcome is
// known. A failure of the hub or transport during a tool call is an
// isError result.
func (h *Hub) forward(ctx context.Context, req *request, method string, r call.Route) (json.RawMessage, error) {
	c := &req.call // in the request: no allocation of its own
	c.Method = method
	r.Server = r.Upstream.ServerConfig()
	r.Timeout = req.snap.callTimeout(r.Server)
	r.Task = method == policy.MethodToolsCall && r.Params.Field("task") != nil
	c.Route = r
	shown := req.sess.shownIn(req.snap.cfg)
	c.Profile, c.MaxResult = shown.profile, shown.maxResult
	c.Decision, c.Notes, c.Sent, c.Meta, c.Conn = policy.Decision{}, call.Notes{}, false, nil, 0
	return req.snap.chain.Handle(ctx, c)
}

// outcomeOf is the outcome of c's request, answered with res and err,
// for its audit record (audit.Writer): decided here once for every
// observer (finish, c.Status).
func outcomeOf(ctx context.Context, c *call.Call, res json.RawMessage, err error) string {
	finish(ctx, c, res, err)
	return string(c.Status)
}

// clippedMark ends a string the hub cut, as the audit trail's do.
const clippedMark = audit.ClippedMark

// The call.Session of a call is its request's session.

func (r *request) ID() string         { return r.sess.ID() }
func (r *request) Caller() string     { return caller(r.sess) }
func (r *request) Transport() string  { return r.sess.transportName() }
func (r *request) Sessionless() bool  { return r.sess.sessionless() }
func (r *request) ClientName() string { return r.sess.GetClientInfo().Name }

// UserKey and User are the caller's (identity.Identity's Key and User),
// "" where the face knows no caller (stdio): answered here then, as
// identity's nil Identity would, not by a call into it for every call's
// audit record.
func (r *request) UserKey() string {
	who := r.sess.identity()
	if who == nil {
		return ""
	}
	return who.Key()
}

func (r *request) User() string {
	who := r.sess.identity()
	if who == nil {
		return ""
	}
	return who.User()
}

// asker puts a call to a person in whichever way its client can be
// reached (approve.Ways), asked under cfg.
func (h *Hub) asker(cfg *config.Config) call.Asker {
	client := func(c *call.Call) approve.Client { return c.Session }
	inbox := approve.Wait{Inbox: h.inbox, Config: cfg, Client: client}
	return approve.Ways{Config: cfg, Client: client, Grant: approve.Grant{Inbox: h.inbox},
		Round:  rounds.Round{Rounds: h.rounds, Config: cfg, Inbox: inbox},
		Elicit: approve.Elicit{Config: cfg, Client: client},
		Inbox:  inbox}
}

// The call.Session's ways to reach the client (an approve.Client, and
// what the 2026-07-28 rounds ask of it).

func (r *request) CanElicit() bool {
	return routes.CanElicit(r.sess.GetClientCapabilities().Elicitation, "")
}
func (r *request) Credential() string { return r.sess.Client() }
func (r *request) Elicit(ctx context.Context, params any) (json.RawMessage, error) {
	return r.sess.Request(ctx, "elicitation/create", params)
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
