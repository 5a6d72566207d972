package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/apps"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/cooperative"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/observe"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy/gate"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// This file is a request's path through the hub itself, in the order it
// takes: Session.Request (or Hub.Answer) hands it to serve, which builds the request
// value and runs the request stages (chain.go); their end is the
// request's Handle, which dispatches it by method, and the view routes a
// tool, prompt or resource to its upstream (forward, chain.go).

// request is one client request on its way through the hub: built once
// where it arrives (serve) and passed down to everything that handles it.
// The ctx beside it carries its cancellation and deadline and the spans of
// the observers that trace it. Its calls upstream are made for sess (the
// owner of upstream's Request), which picks a per-session connection and
// routes what an upstream sends during the call back to this client.
type request struct {
	hub  *Hub
	sess client
	snap *snapshot // loaded once; its audit trail is held until the request ends
	msg  *jsonrpc.Message
	// call is the request as the chain's stages see it (server/call): its
	// session, params (Request: msg.Params scanned once, which the handlers
	// read without validating them again), era and observed call from the
	// start; once the view routed
	// it upstream (forward), the call it went as, and what the stages and
	// its hops noted on it; the audit record kept for the request
	// (Audit), whether it named something the client cannot see (Missed)
	// and how it ended (Status, set once, by finish).
	call call.Call
}

// newRequest is msg of sess, served by h under snap: the request answers
// its own call once it passed the request stages (its Handler).
func newRequest(h *Hub, sess client, snap *snapshot, msg *jsonrpc.Message) *request {
	req := &request{hub: h, sess: sess, snap: snap, msg: msg}
	req.call = call.Call{Origin: call.Origin{Session: req, Owner: sess, Handler: req, Config: snap.cfg, Secrets: snap.secrets}}
	if msg != nil {
		req.call.ID, req.call.Method = msg.ID, msg.Method
	}
	return req
}

// Request answers one of the client's requests: the raw result, or the
// error to answer with (see jsonrpc.ToError). ctx ends when the client
// cancels the request or goes; the face answers once, and not at all when
// the client cancelled.
//
// It is the panic boundary of every face: a request whose handling panics
// is answered -32603, logged with its stack and counted (Hub.Panics),
// and every other request and session goes on.
func (s *Session) Request(ctx context.Context, msg *jsonrpc.Message) (res json.RawMessage, err error) {
	defer s.hub.recovered(msg.Method, &res, &err)
	if msg.Method == listen.Method {
		// Long-lived: served apart from the request path, which holds a
		// snapshot (and its audit trail) until the request ends.
		return s.hub.listen(ctx, s.sess, msg)
	}
	return s.hub.serve(ctx, s.sess, msg)
}

// listen serves a subscriptions/listen of sess once it is checked as the
// request path checks a request of 2026-07-28 (era.Stage), which it
// bypasses: a listen is that version's alone (-32601 in an older era, as
// mcp-go's server answers), and one whose _meta states what the hub does
// not serve is refused (era.Statement.Check). A refused listen leaves its
// session as it was: one of a legacy session, or of a version the hub
// does not serve, made the session a 2026-07-28 one for its life (no more
// list_changed outside listens).
func (h *Hub) listen(ctx context.Context, sess *session, msg *jsonrpc.Message) (json.RawMessage, error) {
	params, _ := jsonrpc.ScanObject(msg.Params) // no object: refused below, stating nothing
	st := era.StateOf(params, msg.Params)
	if !st.Modern {
		return nil, clients.RequiresModern(msg.Method)
	}
	if err := st.Check(msg.Method); err != nil {
		return nil, err
	}
	return h.listens.Serve(ctx, sess, msg)
}

// recovered, deferred by a face's way into the hub (Session.Request,
// Hub.Answer), answers a request of method whose handling panicked:
// -32603 in *res and *err, the panic logged with its stack and counted.
func (h *Hub) recovered(method string, res *json.RawMessage, err *error) {
	if p := recover(); p != nil {
		h.panics.Recovered(method, p, debug.Stack())
		*res, *err = nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error")
	}
}

// serve answers one request of sess: the raw result, or the error to
// answer with (see jsonrpc.ToError). It builds the request value, and
// tells the observers the outcome the audit stage wrote (one outcome).
func (h *Hub) serve(ctx context.Context, sess client, msg *jsonrpc.Message) (json.RawMessage, error) {
	snap := h.acquire()
	if snap.audit != nil {
		defer snap.audit.Release()
	}
	req := newRequest(h, sess, snap, msg)
	if len(msg.Params) > 0 {
		req.call.Request, _ = jsonrpc.ScanObject(msg.Params) // no object: the handlers refuse it
		st := era.StateOf(req.call.Request, msg.Params)
		// Decided once, by StateOf: the era stage refuses by it, and a
		// request refused for what it states leaves its client as it was.
		req.call.Modern, req.call.Refusal = st.Modern, st.Refusal()
		if st.Served() {
			sess.stated(st)  // before anything reads the session's capabilities
			sess.setModern() // told of changes on its listens alone (server/listen)
		}
	}
	obs := h.obs.Observer()
	if obs != nil {
		req.call.Observed = &traffic.Call{Session: sess.ID(), User: sess.identity().Key(), Transport: sess.transportName(), Protocol: sess.ProtocolVersion(), ID: msg.ID,
			Method: msg.Method, Params: msg.Params, Start: time.Now()}
		ctx = obs.CallStarted(ctx, req.call.Observed)
	}
	res, err := snap.requests.Handle(ctx, &req.call) // its audit record written (audit.Writer)
	if c := req.call.Observed; c != nil {
		finish(ctx, &req.call, res, err) // decided already when a record was written
		c.Result, c.Err, c.Status, c.Duration = res, err, req.call.Status, time.Since(c.Start)
		obs.CallEnded(ctx, c)
	}
	return res, err
}

// auditMiss keeps the audit record of a tool call that named no tool the
// client can see.
func (r *request) auditMiss(name string, args json.RawMessage) {
	if r.snap.audit != nil {
		r.call.Audit = audit.Missed(r.sess.ID(), name, args)
	}
}

// finish decides how c's request ended (c.Status), once: a second call
// keeps the first's decision.
func finish(ctx context.Context, c *call.Call, res json.RawMessage, err error) {
	if c.Status != "" {
		return
	}
	toolError := false
	if err == nil {
		if hop := c.HopResult; len(res) > 0 && len(res) == len(hop) && &res[0] == &hop[0] {
			toolError = c.HopToolError
		} else {
			toolError = observe.IsToolError(res)
		}
	}
	c.Status = outcome(ctx, c.Missed, toolError, err)
}

// outcome is how a request ended that was answered with err, or with a
// result that is a tool error or not: the one decision the audit trail,
// the inspector, the metrics and the traces read. missed is true for a
// request that named something the client cannot see, whatever it was
// answered with (call_dynamic_tool answers that with a tool error
// result).
func outcome(ctx context.Context, missed, toolError bool, err error) traffic.Status {
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return traffic.StatusCancelled
	case missed:
		return traffic.StatusNotFound
	case err == nil && toolError:
		return traffic.StatusToolError
	case err == nil:
		return traffic.StatusOK
	}
	var re *rpcError
	if errors.As(err, &re) {
		switch re.Code {
		case codePolicyBlocked:
			return traffic.StatusBlocked
		case codeResourceNotFound, codeMethodNotFound:
			return traffic.StatusNotFound
		}
	}
	return traffic.StatusError
}

// askedGroup notes on the request's call, if it is observed, the group a
// meta-tool the hub answers itself (get_dynamic_tools, a search of one
// group) was asked about, when the client can see it: its row in the
// inspector and its audit line then name the group, as a call's do.
func (r *request) askedGroup(v *view, group string) {
	if c := r.call.Observed; c != nil && group != "" {
		if g, _ := v.LookupGroup(group); g != nil {
			c.Group = g.Name
		}
	}
}

// miss notes that the request named nothing the client can see: its
// outcome is not_found, whatever it is answered with.
func (r *request) miss(target string) {
	r.call.Missed = true
	if c := r.call.Observed; c != nil {
		c.Target = target
	}
}

// field is the raw value of key in the request's params, nil when absent.
func (r *request) field(key string) []byte { return r.call.Request.Field(key) }

// stringField reads a string of the request's params; ok is false when
// the params are no object or the value no string.
func (r *request) stringField(key string) (string, bool) {
	return stringValue(r.call.Request.Field(key))
}

// stringValue decodes a raw JSON string; ok is false for any other value.
func stringValue(raw []byte) (string, bool) { return jsonrpc.StringValue(raw) }

// Handle answers one request of a client, the end of the request stages
// (chain.go; the request is its Call's Handler, call.End): the raw
// result, or the error to answer with (see jsonrpc.ToError).
func (req *request) Handle(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	h := req.hub
	result, err := h.dispatch(ctx, req)
	if errors.Is(err, errProtocol) {
		result, err = h.protocol.Answer(clients.Request{Msg: req.msg, Modern: c.Modern, Session: req.sess,
			Capabilities: req.capabilities, Instructions: req.instructions})
		if err == nil {
			c.Final = true
			return result, nil // final as it is (clients.Protocol)
		}
	}
	if err != nil {
		return nil, err
	}
	return result, nil
}

// errProtocol marks a request that no method of the hub's own answers:
// the handshake, ping, logging/setLevel, or a method that does not exist
// (clients.Protocol).
var errProtocol = errors.New("not a method of the hub's own")

func (h *Hub) dispatch(ctx context.Context, req *request) (json.RawMessage, error) {
	v, size := req.snap.viewOf(req.sess.profileIn(req.snap.cfg)), req.snap.cfg.Settings.PageSize
	// A first page asked while upstreams start waits for them a moment,
	// so that a client that lists once sees them all.
	settled := func() *view {
		if !v.Starting || req.field("cursor") != nil {
			return v
		}
		return h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), req.snap.cfg.Settings.StartupWait, func(v *view) bool { return !v.Starting })
	}
	switch req.msg.Method {
	case "initialize":
		// A client shown flat mode is answered once its first
		// tools/list could be (firstlist.go). The view is the one the
		// clientInfo it states picks (mode: auto, a clients: rule),
		// which the session keeps only as it is answered.
		h.awaitHandshake(ctx, req, req.sess.shownAs(req.snap.cfg, clients.InitializeClient(req.field("clientInfo"))).viewKey)
		return nil, errProtocol
	case "tools/list":
		if v.Mode == config.ModeFlat && v.Unknown && req.field("cursor") == nil {
			// Servers whose tools are known from their last run need not
			// be waited for: their tools are listed now, and the clients
			// told of any change once they are ready (server/listen).
			v = h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), req.sess.firstListWait(req.snap.cfg), toolsKnown)
		}
		req.sess.saw(listen.Tools, v.ToolsHash)
		return v.shaped.ToolsList(req.snap.cfg, req.sess.GetClientInfo().Name, v.ToolsList), nil
	case "tools/call":
		return h.toolsCall(ctx, req, v)
	case "prompts/list":
		v = settled()
		req.sess.saw(listen.Prompts, v.PromptsHash)
		return views.Page("prompts", v.Prompts, req.msg.Params, size)
	case "prompts/get":
		return h.promptsGet(ctx, req, v)
	case "resources/list":
		v = settled()
		req.sess.saw(listen.Resources, v.ResourcesHash)
		return views.Page("resources", v.Resources, req.msg.Params, size)
	case "resources/templates/list":
		v = settled()
		req.sess.saw(listen.Resources, v.ResourcesHash)
		return views.Page("resourceTemplates", v.Templates, req.msg.Params, size)
	case "resources/read":
		return h.resourcesRead(ctx, req, v)
	case "skills/list":
		v = settled()
		req.sess.saw(listen.Resources, v.ResourcesHash)
		return views.Page("skills", v.skills.Entries(), req.msg.Params, size)
	case "skills/get":
		return skills.Get(ctx, extRequest{h, req, v})
	case "resources/directory/read":
		return skills.DirectoryRead(ctx, extRequest{h, req, v})
	case "completion/complete":
		return h.complete(ctx, req, v)
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		send := func(s call.Upstream, on upstream.ConnID, method string, params json.RawMessage) (json.RawMessage, upstream.ConnID, error) {
			timeout := req.snap.cfg.CallTimeoutFor(s.ServerConfig())
			if method == "tasks/list" {
				timeout = req.snap.cfg.Settings.ListTimeout
			}
			return h.obs.RequestOn(ctx, &req.call, req.sess, s, on, method, params, timeout)
		}
		if req.msg.Method == "tasks/list" {
			return views.ListResult("tasks", h.tasks.List(req.sess, send), ""), nil
		}
		return h.tasks.Request(req.sess, req.msg.Method, req.call.Request, send)
	case "resources/subscribe", "resources/unsubscribe":
		return h.routes.Subscribe(ctx, subscriber(h, req, v), req.msg.Params, req.msg.Method == "resources/subscribe")
	}
	return nil, errProtocol
}

func (h *Hub) toolsCall(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	name, ok := req.stringField("name")
	if !ok || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: tools/call needs an object with name, a non-empty string")
	}
	arguments := req.field("arguments")
	settings := req.snap.cfg.Settings
	renames := req.sess.shownIn(req.snap.cfg).renames
	if renames {
		name = v.shaped.ToolName(req.snap.cfg, req.sess.GetClientInfo().Name, name, v.ToolsList) // as the client was shown it (see clients:)
	}
	if v.cooperative && cooperative.IsTool(name) {
		return (&coopHost{h: h, req: req, v: v}).serve(ctx, name, arguments) // the hub's own (cooperative.go)
	}
	if v.Mode == config.ModeFlat {
		r, ok := v.FlatRoutes[name]
		if (!ok || r.Cached) && v.Starting {
			// Its upstream may be one still starting, or it is known from
			// its last run only: wait for the upstream.
			v = h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), settings.StartupWait, func(v *view) bool {
				r, ok := v.FlatRoutes[name]
				return ok && !r.Cached || !v.Starting
			})
			r, ok = v.FlatRoutes[name]
		}
		if !ok {
			r, ok = apps.CalledTool(ctx, extRequest{h, req, v}, name) // an MCP App's call by its server's name (server/apps)
		}
		if !ok {
			req.miss(name)
			req.auditMiss(name, arguments)
			msg := "Tool not found: " + clip.Echo(name) // the client knows the tools by other names (see clients:)
			if !renames {
				msg = v.FlatToolNotFound(name)
			}
			return nil, errorf(codeMethodNotFound, msg)
		}
		return h.callRoute(ctx, req, r, arguments)
	}
	if r, ok := v.FlatRoutes[name]; ok {
		// A tool its group exposes beside the meta-tools: called as in
		// flat mode, its arguments the upstream's own.
		return h.callRoute(ctx, req, r, arguments)
	}
	if name == views.SearchToolName && v.Search == nil && v.Starting && settings.Search != config.SearchOff {
		// search: auto offers it once the groups starting hold enough
		// tools: wait for them, as flat mode waits for a tool not known yet.
		v = h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), settings.StartupWait, func(v *view) bool { return v.Search != nil || !v.Starting })
	}
	if name != views.GetToolsName && name != views.CallToolName && name != views.SearchToolName {
		if r, ok := apps.CalledTool(ctx, extRequest{h, req, v}, name); ok {
			return h.callRoute(ctx, req, r, arguments) // an MCP App's call by its server's name (server/apps)
		}
	}
	if name != views.GetToolsName && name != views.CallToolName && (name != views.SearchToolName || v.Search == nil) {
		// Whatever its arguments: search_dynamic_tools when it is not
		// offered is a tool like any other the client cannot see.
		req.miss(name)
		req.auditMiss(name, arguments)
		return nil, errorf(codeMethodNotFound, "Tool not found: "+clip.Echo(name))
	}
	args, err := views.ParseDynamicArgs(arguments)
	if err != nil {
		return toolError("invalid arguments: " + err.Error()), nil
	}
	switch {
	case v.GroupStarting(args.Group):
		// The group is listed from the start; a call for it waits until it
		// is up (or has failed), as long as connecting may take.
		v = h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), settings.ConnectTimeout, func(v *view) bool { return !v.GroupStarting(args.Group) })
	case name == views.SearchToolName && args.Group == "" && v.Starting:
		// A search of every group waits for those starting as a list does,
		// rather than answer that nothing matches while their tools are
		// not known yet.
		v = h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), settings.StartupWait, func(v *view) bool { return !v.Starting })
	}
	switch name {
	case views.GetToolsName:
		req.askedGroup(v, args.Group)
		return v.GetDynamicTools(args), nil
	case views.CallToolName:
		c := v.CallDynamicTool(args, req.field("_meta"), req.field("task"))
		if c.Missed {
			req.miss(args.Name)
			req.auditMiss(args.Name, args.Args)
		}
		if c.Answer != nil {
			return c.Answer, nil
		}
		return h.forward(ctx, req, policy.MethodToolsCall, call.Route{Upstream: c.Route.Server, Name: c.Route.Name, Args: c.Args, Params: c.Params,
			Schema: c.Schema})
	}
	if v.Search == nil { // gone while it waited (a reload turned it off)
		req.miss(name)
		req.auditMiss(name, arguments)
		return nil, errorf(codeMethodNotFound, "Tool not found: "+clip.Echo(name))
	}
	req.askedGroup(v, args.Group)
	return v.SearchDynamicTools(args), nil
}

// callRoute calls the upstream tool r names with the client's params,
// only the name changed to the upstream's.
// Arguments that are present must be an object (or null, for none), as
// call_dynamic_tool's args must: the policy's argument rules read an
// object's members, and a call they cannot read is not passed them by.
func (h *Hub) callRoute(ctx context.Context, req *request, r route, arguments json.RawMessage) (json.RawMessage, error) {
	if len(arguments) > 0 && arguments[0] != '{' && string(arguments) != "null" {
		return nil, errorf(codeInvalidParams, "invalid params: arguments must be an object")
	}
	return h.forward(ctx, req, policy.MethodToolsCall, call.Route{Upstream: r.Server, Name: r.Name, Args: arguments,
		Params: req.call.Request, Rename: true, Schema: r.Tool.InputSchema}) // the client's name in Params (Call.CalledName)
}

func (h *Hub) promptsGet(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	name, ok := req.stringField("name")
	if !ok || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: prompts/get needs a name")
	}
	v = h.awaitRoute(ctx, req, v, func(v *view) bool { _, ok := v.PromptRoutes[name]; return ok })
	r, ok := v.PromptRoutes[name]
	if !ok {
		return nil, errorf(codeInvalidParams, "Prompt not found: "+clip.Echo(name))
	}
	return h.forward(ctx, req, policy.MethodPromptsGet, call.Route{Upstream: r.Server, Name: r.Name, Args: req.field("arguments"),
		Params: req.call.Request, Rename: true})
}

// isResultURI reports whether uri names a kept result (or claims to).
func isResultURI(uri string) bool { return resultcap.IsURI(uri) }

// judgeResultRead judges the read of a kept result as the call that made
// it: the policy must still let that call through. It is audited as a
// read of the call's group and tool.
func judgeResultRead(req *request, r *resultcap.Result, uri string) error {
	snap := req.snap
	if err := snap.audit.Admit(); err != nil {
		return err
	}
	d := snap.policy.Decide(policy.Request{Group: r.Group, Server: r.Server, Method: policy.MethodToolsCall, Name: r.Tool, Args: r.Args})
	if snap.audit != nil {
		req.call.Audit = &audit.Record{Time: time.Now().UTC(), Session: req.sess.ID(), Group: r.Group, Server: r.Server,
			Method: policy.MethodResourcesRead, Tool: r.Tool, URI: uri, Decision: string(d.Action), Rule: d.Rule}
	}
	if c := req.call.Observed; c != nil {
		c.Group, c.Server, c.Target, c.Rule, c.Action = r.Group, r.Server, uri, d.Rule, string(d.Action)
	}
	if d.Action == config.ActionDeny {
		// A prompt rule is not asked again: the person let the call
		// through when it was made, and a page gives nothing new.
		return gate.Blocked(d, "the call that made this result is not allowed now")
	}
	return nil
}

func (h *Hub) resourcesRead(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	uri, ok := req.stringField("uri")
	if !ok || uri == "" {
		return nil, errorf(codeInvalidParams, "invalid params: resources/read needs a uri")
	}
	if isResultURI(uri) { // a result cut to fit max_result, for the session that made the call
		r, query, named := h.results.Find(uri, caller(req.sess))
		if r != nil && req.snap.viewOf(req.sess.profileIn(req.snap.cfg)).GroupIndex[r.Group] == nil {
			r = nil // its group is no longer the session's to see
		}
		if r == nil {
			if named {
				req.miss(uri)
			}
			return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": clip.Echo(uri)}}
		}
		page, err := r.Page(query)
		if err == nil {
			err = judgeResultRead(req, r, uri)
		}
		if err != nil {
			return nil, err
		}
		return r.Read(page)
	}
	if res, ok, err := apps.Read(ctx, extRequest{h, req, v}, uri); ok {
		return res, err // an MCP App's ui:// resource (server/apps)
	}
	v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.skills.File(uri) != nil || v.ResolveResource(uri) != nil })
	if r := v.skills.File(uri); r != nil {
		return skills.ReadFile(ctx, extRequest{h, req, v}, r, uri) // server/skills
	}
	s := v.ResolveResource(uri)
	if s == nil {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": clip.Echo(uri)}}
	}
	return h.forward(ctx, req, policy.MethodResourcesRead, call.Route{Upstream: s, Name: uri, Params: req.call.Request})
}

// awaitRoute is the view to route a request for something found names: v
// when found holds there or no upstream is starting; otherwise, as a call
// to a tool not known yet waits (toolsCall), the first view within
// startup_wait where it holds or none is starting, else the last seen. A
// client's first request may name a prompt or a resource of an upstream
// still starting, and "not found" would be an answer the server never
// gives.
func (h *Hub) awaitRoute(ctx context.Context, req *request, v *view, found func(*view) bool) *view {
	if !v.Starting || found(v) {
		return v
	}
	return h.awaitView(ctx, req.sess.profileIn(req.snap.cfg), req.snap.cfg.Settings.StartupWait, func(v *view) bool { return found(v) || !v.Starting })
}

// subscriber is req, which subscribes its session to resources in view
// v, as the session table takes it (routes.Subscriber).
func subscriber(h *Hub, req *request, v *view) routes.Subscriber[client] {
	return routes.Subscriber[client]{
		Session: req.sess,
		Resolve: func(ctx context.Context, uri string, wait bool) (*upstream.Server, bool) {
			if wait {
				v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.ResolveResource(uri) != nil })
			}
			return v.ResolveResource(uri), v.HidesResource(uri)
		},
		Routed: func(s *upstream.Server, uri string) { observe.Routed(req.call.Observed, s, uri, "", "") },
		Subscribe: func(ctx context.Context, s *upstream.Server, uri string) error {
			_, err := h.obs.Request(ctx, &req.call, nil, s, "resources/subscribe", map[string]string{"uri": uri}, req.snap.cfg.CallTimeoutFor(s.Config))
			return err
		},
	}
}

// extRequest is req as the packages that serve an extension see it
// (server/skills, server/apps): its params, the view it routes by, and
// forward.
type extRequest struct {
	h   *Hub
	req *request
	v   *view
}

func (e extRequest) String(key string) (string, bool) { return e.req.stringField(key) }
func (e extRequest) Params() jsonrpc.Object           { return e.req.call.Request }

func (e extRequest) Skills(ctx context.Context, found func(*skillTable) bool) *skillTable {
	return e.h.awaitRoute(ctx, e.req, e.v, func(v *view) bool { return found(v.skills) }).skills
}

func (e extRequest) Apps(ctx context.Context, found func(*appTable) bool) *appTable {
	return e.h.awaitRoute(ctx, e.req, e.v, func(v *view) bool { return found(v.apps) }).apps
}

func (e extRequest) Forward(ctx context.Context, method string, s *upstream.Server, name string, params jsonrpc.Object) (json.RawMessage, error) {
	return e.h.forward(ctx, e.req, method, call.Route{Upstream: s, Name: name, Params: params})
}

// complete routes completion/complete by its reference: a prompt by its
// exposed name, a resource template by its URI template.
func (h *Hub) complete(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(req.msg.Params, &p) != nil || json.Unmarshal(p["ref"], &ref) != nil {
		return nil, errorf(codeInvalidParams, "invalid params: completion/complete needs a ref")
	}
	var s *upstream.Server
	switch ref.Type {
	case "ref/prompt":
		v = h.awaitRoute(ctx, req, v, func(v *view) bool { _, ok := v.PromptRoutes[ref.Name]; return ok })
		r, ok := v.PromptRoutes[ref.Name]
		if !ok {
			return nil, errorf(codeInvalidParams, "Prompt not found: "+clip.Echo(ref.Name))
		}
		s = r.Server
		ref.Name = r.Name
		p["ref"], _ = json.Marshal(map[string]string{"type": ref.Type, "name": r.Name})
	case "ref/resource":
		v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.CompletionServer(ref.URI) != nil })
		if s = v.CompletionServer(ref.URI); s == nil {
			return nil, errorf(codeInvalidParams, "Resource template not found: "+clip.Echo(ref.URI))
		}
	default:
		return nil, errorf(codeInvalidParams, "invalid params: unknown ref type "+clip.Echo(ref.Type))
	}
	observe.Routed(req.call.Observed, s, cmp.Or(ref.Name, ref.URI), "", "")
	return h.obs.Request(ctx, &req.call, req.sess, s, "completion/complete", p, req.snap.cfg.CallTimeoutFor(s.Config))
}
