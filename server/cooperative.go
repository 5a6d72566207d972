package server

// The hook of the cooperative policy tools (server/cooperative) into the
// hub: they are listed in a view whose config (or profile) says
// settings.cooperative: on, and their calls are answered here, by the
// code that decides real calls. What this file calls of the rest of the
// hub, for whoever moves it: view.toolName, view.flatRoutes,
// view.lookupGroup, groupView.toolRoutes, view.resolveResource,
// snapshot.policy.Decide (the decision forward takes), the inbox's grants
// (approve.Inbox.Covering: read, never used up; Keep), Hub.asker (the
// path a prompt rule's call takes: grant, input_required round,
// elicitation, inbox), call.AnswerWith, ratelimit.Limiter.Take,
// audit.Trail.Admit, request.audit, caller, sessionless, approve.NewID,
// approve.ClipBy, listResult, hashOf, capTools, stringValue,
// approve.PromptTimeout, call.IsAnswer, call.Call.Approved.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/cooperative"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// withCooperative is v with the cooperative tools listed when cfg (a
// profile's, for a profile's view) turns them on: after the meta-tools in
// dynamic mode, first in flat mode, within max_tools. An upstream tool
// listed under one of their names is left out, as expose leaves out a tool
// named as a meta-tool: the hub's own tool is the one a client calls by it.
func withCooperative(v *view, cfg *config.Config) *view {
	if !cfg.Settings.Cooperates() {
		return v
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"` // RawMessage keeps each definition's bytes
	}
	if err := json.Unmarshal(v.ToolsList, &list); err != nil {
		v.Problems = append(v.Problems, "the cooperative tools are not listed: "+err.Error())
		return v
	}
	at := 0
	if v.Mode != config.ModeFlat {
		at = 2 // get_dynamic_tools, call_dynamic_tool
		if v.Search != nil {
			at++
		}
	}
	tools := slices.Clone(list.Tools[:min(at, len(list.Tools))])
	tools = append(tools, cooperative.Definitions()...)
	for _, t := range list.Tools[min(at, len(list.Tools)):] {
		name, _ := stringValue(jsonrpc.Field(t, "name"))
		if cooperative.IsTool(name) {
			v.Problems = append(v.Problems, fmt.Sprintf("tool %q of %s is hidden: its name is that of a cooperative tool of the hub (set prefix: true on the group)",
				name, v.FlatRoutes[name].Server.Config.ID()))
			delete(v.FlatRoutes, name)
			continue
		}
		tools = append(tools, t)
	}
	v.ToolsList = views.ListResult("tools", views.CapTools(tools, cfg.Settings.MaxTools), "")
	v.ToolsHash = views.HashOf(v.ToolsList)
	v.cooperative = true
	return v
}

// serve answers the request's call of the cooperative tool name.
func (c *coopHost) serve(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	// The answer is about the tools a real call would find: while servers
	// start, wait for them as a call of a tool not yet listed does.
	c.v = c.h.awaitRoute(ctx, c.req, c.v, func(*view) bool { return false })
	res, err := cooperative.Serve(ctx, c, name, args)
	if err != nil {
		return call.AnswerWith(err) // a 2026-07-28 client's input_required round answers as it is
	}
	return res, nil
}

// coopHost is the hub as the cooperative tools see it, for one request.
type coopHost struct {
	h   *Hub
	req *request
	v   *view
}

// Take counts per caller, as the seed says: the one the face knows (a
// JWT's subject, a static token's name) has one budget however many
// sessions it opens; else the session (stdio, or no token checked), or a
// sessionless request's credential (see caller).
func (c *coopHost) Take(tool string, limit *config.RateLimit) (time.Duration, bool) {
	rl := *limit
	if c.req.sess.UserKey() != "" {
		rl.Per = config.RatePerUser
	}
	d := policy.Decision{Rule: tool, RuleGroup: cooperative.RateScope, Rate: &rl}
	return c.h.rates.Take(d, c.req, c.req.sess.profileName(c.req.snap.cfg))
}

func (c *coopHost) Audit(e cooperative.Entry) (bool, error) {
	snap := c.req.snap
	if snap.audit == nil {
		return false, nil
	}
	if err := snap.audit.Admit(); err != nil {
		return true, err // audit.required and the trail fails: nothing unaudited
	}
	rec := &audit.Record{Time: time.Now().UTC(), Session: c.req.sess.ID(), Method: policy.MethodToolsCall, Tool: e.Tool,
		Decision: e.Decision, Arguments: c.req.field("arguments"), Event: e.EventID}
	if e.Reported {
		rec.Trust, rec.Report = trustReported, e.Report
	}
	c.req.call.Audit = rec
	return true, nil
}

// trustReported marks the audit record of an agent's reportAction.
const trustReported = "reported by the agent: not proof that it happened"

func (c *coopHost) Route(name, group string) (g, server, tool string, ok bool) {
	r, ok := c.route(name, group)
	if !ok {
		return "", "", "", false
	}
	return r.Server.Config.Group, r.Server.Config.Name, r.Name, true
}

// route finds the tool the client calls name, as toolsCall and
// View.CallDynamicTool find it: by the name it was shown, or by its group's
// name for it in a group that is ready.
func (c *coopHost) route(name, group string) (route, bool) {
	if group != "" {
		g, _ := c.v.LookupGroup(group)
		if g == nil {
			return route{}, false
		}
		r, ok := g.ToolRoutes[name]
		return r, ok
	}
	r, ok := c.v.FlatRoutes[c.v.shaped.ToolName(c.req.snap.cfg, c.req.sess.GetClientInfo().Name, name, c.v.ToolsList)]
	return r, ok
}

// resolve is the call a real request for t makes (its method, and the
// server's config, name and arguments of its route), and what the policy
// decides for it: forward's very decision.
func (c *coopHost) resolve(t cooperative.Target) (call.Call, policy.Decision, bool) {
	var cl call.Call
	if t.URI != "" {
		s := c.v.ResolveResource(t.URI)
		if s == nil {
			return cl, policy.Decision{}, false
		}
		cl.Method, cl.Route = policy.MethodResourcesRead, call.Route{Server: s.Config, Name: t.URI}
	} else {
		r, ok := c.route(t.Tool, t.Group)
		if !ok {
			return cl, policy.Decision{}, false
		}
		cl.Method, cl.Route = policy.MethodToolsCall, call.Route{Server: r.Server.Config, Name: r.Name, Args: t.Arguments}
	}
	d := c.req.snap.policy.Decide(policy.Request{Group: cl.Server.Group, Server: cl.Server.Name, Method: cl.Method, Name: cl.Name, Args: cl.Args})
	return cl, d, d.Rule != policy.RuleHidden // the view hides these already
}

func (c *coopHost) Decide(t cooperative.Target) cooperative.Verdict {
	cl, d, ok := c.resolve(t)
	if !ok {
		return cooperative.Verdict{}
	}
	v := cooperative.Verdict{Found: true, Action: d.Action, Rule: d.Rule, Description: d.Description, Rate: d.Rate}
	if d.Action == config.ActionPrompt {
		v.Grant = c.h.inbox.Covering(caller(c.req.sess), cl.Server.Group, cl.Server.Name, cl.Method, cl.Name, cl.Args)
	}
	return v
}

func (c *coopHost) Ask(ctx context.Context, t cooperative.Target, v cooperative.Verdict, a cooperative.Ask) (cooperative.Grant, error) {
	cl, d, ok := c.resolve(t)
	if !ok || d.Action != config.ActionPrompt {
		return cooperative.Grant{Refused: "the policy no longer leaves this call to a person"}, nil
	}
	sess := c.req.sess
	if a.Scope == cooperative.ScopeSession && sess.sessionless() {
		return cooperative.Grant{Refused: "a request without a session cannot hold a grant for its session: ask with scope once"}, nil
	}
	matcher, exact, err := cooperative.ExactArgs(cl.Args)
	if err != nil {
		return cooperative.Grant{Refused: err.Error()}, nil
	}
	d.Description = a.Why
	if len(exact) == 0 {
		d.Description += " (a grant for any arguments)"
	}
	ctx, cancel := context.WithTimeout(ctx, min(a.Wait, approve.PromptTimeout(c.req.snap.cfg)))
	defer cancel()
	// The call asked about is cl, not the request's own; who approved it
	// is noted on the request's call, as for its own.
	cc := cl
	cc.Origin = call.Origin{Session: c.req, Owner: sess}
	cc.Modern, cc.Request = c.req.call.Modern, c.req.call.Request
	err = c.h.asker(c.req.snap.cfg).Ask(ctx, &cc, d)
	if n := cc.Notes; n.ApprovedBy != "" {
		c.req.call.Approved(n.Grant, n.ApprovedBy)
	}
	if err != nil {
		if call.IsAnswer(err) {
			return cooperative.Grant{}, err
		}
		return cooperative.Grant{Refused: err.Error()}, nil
	}
	by := "client " + sess.GetClientInfo().Name // its user, through elicitation or a round
	if n := c.req.call.Notes; n.ApprovedBy != "" {
		by = n.ApprovedBy // the inbox's approver
	}
	now := c.h.inbox.Now()
	g := approval.Grant{ID: approve.NewID("g-"), Created: now, ApprovedBy: approve.ClipBy(by), Method: cl.Method, Tool: cl.Name,
		Group: cl.Server.Group, Server: cl.Server.Name, Args: exact, Session: sess.ID()}
	if a.Scope == cooperative.ScopeOnce {
		g.CallsLeft = 1
	}
	if a.Expires > 0 {
		g.Expires = now.Add(a.Expires)
	}
	c.h.inbox.Keep(g, matcher, caller(sess))
	if rec := c.req.call.Audit; rec != nil { // this call's own record (Audit)
		rec.Grant, rec.ApprovedBy = g.ID, g.ApprovedBy
	}
	c.h.logger.Info("cooperative: permission granted", "grant", g.ID, "by", g.ApprovedBy, "name", cl.Name, "scope", a.Scope)
	return cooperative.Grant{ID: g.ID, ApprovedBy: g.ApprovedBy, Expires: g.Expires}, nil
}

func (c *coopHost) Policy() cooperative.View {
	cfg := c.req.snap.cfg
	out := cooperative.View{Global: cfg.Policy, Default: cmpAction(cfg.PolicyDefault)}
	for _, g := range cfg.Groups {
		if _, ok := c.v.GroupIndex[g.Name]; ok {
			out.Groups = append(out.Groups, g)
		}
	}
	return out
}

// cmpAction is the policy's default as policy.New reads it.
func cmpAction(a config.Action) config.Action {
	if a == "" {
		return config.ActionAllow
	}
	return a
}
