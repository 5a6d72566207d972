package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Version is the hub's version, reported to clients and upstreams.
var Version = "dev"

// Hub is the MCP server the client talks to, in front of a Manager's
// upstreams.
type Hub struct {
	mgr    *upstream.Manager
	logger *slog.Logger
	mcp    *mcpserver.MCPServer
	routes *routes
	obs    atomic.Pointer[traffic.Observer] // set by Observe; nil: no observer calls

	snap   atomic.Pointer[snapshot] // never nil after New; replaced whole by swap
	swapMu sync.Mutex               // one swap at a time, so no change is lost

	panics      atomic.Uint64          // recovered panics, ever (see Recovered)
	listPending [listKinds]atomic.Bool // a list_changed waits out its window
	audits      auditStats             // of every trail the hub opened

	// ctx ends at Close: it stops the requests from upstreams that the hub
	// is passing to clients, and the unsubscribes it sends for sessions
	// that ended.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{} // closed at Close: every goroutine of spawn ends
	// unsubscribing holds a token for each upstream unsubscribe being
	// sent for a session that ended: they are bounded in number.
	unsubscribing chan struct{}

	spawnMu sync.Mutex     // orders spawn against Close; guards closed
	closed  bool           // Close has begun: spawn starts nothing
	wg      sync.WaitGroup // every goroutine of spawn; Close waits for it
	once    sync.Once
}

// New builds the hub for cfg's upstreams in mgr and opens its audit trail.
// The hub is whole when New returns; nothing reaches it from upstreams
// before Run, which keeps its view current and passes on what upstreams
// send.
func New(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger) (*Hub, error) {
	h := &Hub{
		mgr:           mgr,
		logger:        logger,
		stop:          make(chan struct{}),
		unsubscribing: make(chan struct{}, maxUnsubscribing),
		routes:        newRoutes(),
	}
	audit, err := h.openAudit(cfg)
	if err != nil {
		return nil, err
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	// Upstreams are told what the client can do (sampling, elicitation,
	// roots) once it has said so: for stdio, its one initialize.
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterInitialize(func(_ context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		mgr.SetClientCapabilities(req.Params.Capabilities)
	})
	h.mcp = mcpserver.NewMCPServer("dynamic-mcp", Version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithCompletions(),
		// Tasks are passed through to the upstreams that run them; a
		// client only asks for one where a tool's definition says so.
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithLogging(),
		mcpserver.WithHooks(hooks),
	)
	pol := policy.New(cfg)
	h.snap.Store(newSnapshot(cfg, pol, buildView(cfg.Mode, cfg.Settings.Search, mgr, pol), audit))
	return h, nil
}

// SetConfig switches the hub to cfg after a reload (mode, page size,
// timeouts, policy, audit trail) and tells clients what changed for them.
// The manager is moved to cfg separately, by its Apply, first.
func (h *Hub) SetConfig(cfg *config.Config) {
	h.swapMu.Lock()
	defer h.swapMu.Unlock()
	if h.isClosed() {
		return // the trail is closed for good, and no client is told anything
	}
	cur := h.snapshot()
	pol := policy.New(cfg)
	next := newSnapshot(cfg, pol, buildView(cfg.Mode, cfg.Settings.Search, h.mgr, pol), cur.audit)
	if cur.cfg.AuditPath() != cfg.AuditPath() || cur.cfg.Audit.Arguments != cfg.Audit.Arguments || cur.cfg.Audit.Required != cfg.Audit.Required {
		if audit, err := h.openAudit(cfg); err != nil {
			h.logger.Error("reload: keeping the audit trail where it was", "err", err)
		} else {
			next.audit = audit
		}
	}
	h.swap(next)
	h.announce(cur.view, next.view)
	h.unsubscribeHidden(next.view)
}

// config is the current config.
func (h *Hub) config() *config.Config { return h.snapshot().cfg }

// Run starts the hub's event loop and returns at once. Until Close, the
// loop rebuilds the view whenever an upstream changes and passes what
// upstreams send to the client sessions it is for. It never waits for a
// client: notifications are queued by the sessions, which drop what does
// not fit, and each request runs on its own goroutine (the manager caps
// them per upstream).
func (h *Hub) Run() {
	h.spawn(func() {
		for {
			select {
			case <-h.stop:
				return
			case <-h.mgr.Changes():
				h.safely("refresh the view", h.refresh)
			case e := <-h.mgr.Events():
				h.safely("route an upstream event", func() { h.route(e) })
			}
		}
	})
}

// safely runs f, logging and counting a panic instead of crashing, so
// one bad message cannot stop the loop.
func (h *Hub) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			h.Recovered(what, r, debug.Stack())
		}
	}()
	f()
}

// route passes one event from an upstream on.
func (h *Hub) route(e upstream.Event) {
	switch e.Kind {
	case upstream.EventNotification:
		h.upstreamNotification(e.Context, e.Server, e.Method, e.Params)
	case upstream.EventFlush:
		e.Reply(nil, nil) // everything before it is routed
	case upstream.EventRequest:
		h.spawn(func() {
			ctx, cancel := context.WithCancel(e.Context)
			defer cancel()
			defer context.AfterFunc(h.ctx, cancel)()
			res, err := json.RawMessage(nil), errors.New("dynamic-mcp: internal error")
			h.safely("pass an upstream request on", func() { res, err = h.upstreamRequest(ctx, e.Server, e.Method, e.Params) })
			e.Reply(res, err)
		})
	}
}

// Close stops Run and returns once everything the hub started has ended:
// the event loop, the requests from upstreams it passes on (cancelled),
// each session's notifications, pending list_changed notifications, the
// unsubscribes of ended sessions (cancelled), and the audit trail's
// writer, once the requests that hold the trail are done and every record
// is written (see Hub.acquire). The faces are closed before it, the
// upstreams after it. Calls that would be audited after Close lose their
// records, or fail with audit.required.
func (h *Hub) Close() error {
	var err error
	h.once.Do(func() {
		h.spawnMu.Lock()
		h.closed = true
		h.spawnMu.Unlock()
		close(h.stop)
		h.cancel()
		h.swapMu.Lock()
		cur := h.snapshot()
		if cur.audit != nil {
			next := *cur
			next.audit = closedAudit(&h.audits, cur.cfg.Audit.Required)
			h.swap(&next) // retires the trail: closed when its last holder is done
		}
		h.swapMu.Unlock()
		h.wg.Wait()
		err = cur.audit.err()
	})
	return err
}

// spawn runs f on a goroutine that Close waits for, and reports whether
// it did: once Close has begun it starts nothing. f must end when h.stop
// is closed or h.ctx is done.
func (h *Hub) spawn(f func()) bool {
	h.spawnMu.Lock()
	defer h.spawnMu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Go(f)
	return true
}

// isClosed reports whether Close has begun.
func (h *Hub) isClosed() bool {
	h.spawnMu.Lock()
	defer h.spawnMu.Unlock()
	return h.closed
}

// refresh rebuilds the view and sends list_changed for what changed.
func (h *Hub) refresh() {
	h.swapMu.Lock()
	defer h.swapMu.Unlock()
	cur := h.snapshot()
	next := *cur
	next.view = buildView(cur.cfg.Mode, cur.cfg.Settings.Search, h.mgr, cur.policy)
	h.swap(&next)
	h.announce(cur.view, next.view)
	h.unsubscribeHidden(next.view)
}

// announce logs the new problems of v and tells clients which of their
// lists differ from old.
func (h *Hub) announce(old, v *view) {
	for _, p := range v.problems {
		if !slices.Contains(old.problems, p) {
			h.logger.Error(p)
		}
	}
	for _, w := range v.warnings {
		if !slices.Contains(old.warnings, w) {
			h.logger.Warn(w)
		}
	}
	for k := range listKinds {
		if old.hash(k) != v.hash(k) {
			h.listChanged(k)
		}
	}
}

// ToolsListFor builds the tools/list result mode would give, for comparing
// the modes' sizes.
func (h *Hub) ToolsListFor(mode config.Mode) json.RawMessage {
	return buildView(mode, h.config().Settings.Search, h.mgr, nil).toolsList
}

// Problems lists what the current view had to hide, such as colliding names.
func (h *Hub) Problems() []string { return h.snapshot().view.problems }

// Warnings lists what the current view found doubtful, such as policy
// rules naming arguments their tools do not have.
func (h *Hub) Warnings() []string { return h.snapshot().view.warnings }

// handle answers one request of a client: the raw result, or the error
// to answer with (see jsonrpc.ToError).
func (h *Hub) handle(ctx context.Context, msg *jsonrpc.Message) (json.RawMessage, error) {
	result, err := h.dispatch(ctx, msg)
	if errors.Is(err, errDelegated) {
		return h.delegate(ctx, msg)
	}
	if err != nil {
		return nil, err
	}
	if modern(msg.Params) {
		result = decorateModern(msg.Method, result)
	}
	return result, nil
}

// errDelegated marks a request mcp-go's MCPServer answers: initialize and
// version negotiation, ping, logging/setLevel.
var errDelegated = errors.New("delegated")

func (h *Hub) dispatch(ctx context.Context, msg *jsonrpc.Message) (json.RawMessage, error) {
	ctx, snap, release := h.acquire(ctx)
	defer release()
	v, size := snap.view, snap.cfg.Settings.PageSize
	// A first page asked while upstreams start waits for them a moment,
	// so that a client that lists once sees them all.
	settled := func() *view {
		if !v.starting || jsonrpc.Field(msg.Params, "cursor") != nil {
			return v
		}
		return h.awaitView(ctx, snap.cfg.Settings.StartupWait, func(v *view) bool { return !v.starting })
	}
	switch msg.Method {
	case "tools/list":
		if v.mode == config.ModeFlat {
			v = settled()
		}
		h.saw(ctx, listTools, v.toolsHash)
		return v.toolsList, nil
	case "tools/call":
		return h.toolsCall(ctx, v, msg.Params)
	case "prompts/list":
		v = settled()
		h.saw(ctx, listPrompts, v.promptsHash)
		return page("prompts", v.prompts, msg.Params, size)
	case "prompts/get":
		return h.promptsGet(ctx, v, msg.Params)
	case "resources/list":
		v = settled()
		h.saw(ctx, listResources, v.resourcesHash)
		return page("resources", v.resources, msg.Params, size)
	case "resources/templates/list":
		v = settled()
		h.saw(ctx, listResources, v.resourcesHash)
		return page("resourceTemplates", v.templates, msg.Params, size)
	case "resources/read":
		return h.resourcesRead(ctx, v, msg.Params)
	case "completion/complete":
		return h.complete(ctx, v, msg.Params)
	case "tasks/get", "tasks/result", "tasks/cancel":
		return h.taskRequest(ctx, msg.Method, msg.Params)
	case "tasks/list":
		return h.tasksList(ctx)
	case "resources/subscribe", "resources/unsubscribe":
		sess, ok := mcpserver.ClientSessionFromContext(ctx).(*session)
		if !ok {
			return nil, errorf(codeInternalError, "no session")
		}
		return h.subscribe(ctx, sess, v, msg.Params, msg.Method == "resources/subscribe")
	}
	return nil, errDelegated
}

// delegate has mcp-go's MCPServer answer msg and takes its result or
// error apart; the id of the answer is the client's own bytes.
func (h *Hub) delegate(ctx context.Context, msg *jsonrpc.Message) (json.RawMessage, error) {
	if msg.Method == "logging/setLevel" {
		defer h.setLogLevel()
	}
	switch r := h.mcp.HandleMessage(ctx, msg.Raw).(type) {
	case mcp.JSONRPCResponse:
		return jsonrpc.Marshal(r.Result)
	case *mcp.JSONRPCResponse:
		return jsonrpc.Marshal(r.Result)
	case mcp.JSONRPCError:
		return nil, &rpcError{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	case *mcp.JSONRPCError:
		return nil, &rpcError{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	case nil:
		return nil, errorf(codeInternalError, "no answer to "+msg.Method)
	default:
		return nil, errorf(codeInternalError, fmt.Sprintf("unexpected answer to %s: %T", msg.Method, r))
	}
}

func (h *Hub) toolsCall(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	name, ok := stringField(params, "name")
	if !ok || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: tools/call needs an object with name, a non-empty string")
	}
	arguments := jsonrpc.Field(params, "arguments")
	settings := h.snapshotOf(ctx).cfg.Settings
	if v.mode == config.ModeFlat {
		r, ok := v.flatRoutes[name]
		if !ok && v.starting {
			// Its upstream may be one still starting: wait for it.
			v = h.awaitView(ctx, settings.StartupWait, func(v *view) bool {
				_, ok := v.flatRoutes[name]
				return ok || !v.starting
			})
			r, ok = v.flatRoutes[name]
		}
		if !ok {
			h.auditMiss(ctx, name, arguments)
			return nil, errorf(codeMethodNotFound, "Tool not found: "+name)
		}
		return h.callRoute(ctx, r, params, arguments)
	}
	if r, ok := v.flatRoutes[name]; ok {
		// A tool its group exposes beside the meta-tools: called as in
		// flat mode, its arguments the upstream's own.
		return h.callRoute(ctx, r, params, arguments)
	}
	if name == searchToolName && v.search == nil && v.starting && settings.Search != config.SearchOff {
		// search: auto offers it once the groups starting hold enough
		// tools: wait for them, as flat mode waits for a tool not known yet.
		v = h.awaitView(ctx, settings.StartupWait, func(v *view) bool { return v.search != nil || !v.starting })
	}
	if name != getToolsName && name != callToolName && (name != searchToolName || v.search == nil) {
		// Whatever its arguments: search_dynamic_tools when it is not
		// offered is a tool like any other the client cannot see.
		h.auditMiss(ctx, name, arguments)
		return nil, errorf(codeMethodNotFound, "Tool not found: "+name)
	}
	var args dynamicArgs
	if len(arguments) > 0 && string(arguments) != "null" {
		if err := json.Unmarshal(arguments, &args); err != nil {
			return toolError("invalid arguments: " + err.Error()), nil
		}
	}
	switch {
	case v.groupStarting(args.Group):
		// The group is listed from the start; a call for it waits until it
		// is up (or has failed), as long as connecting may take.
		v = h.awaitView(ctx, settings.ConnectTimeout, func(v *view) bool { return !v.groupStarting(args.Group) })
	case name == searchToolName && args.Group == "" && v.starting:
		// A search of every group waits for those starting as a list does,
		// rather than answer that nothing matches while their tools are
		// not known yet.
		v = h.awaitView(ctx, settings.StartupWait, func(v *view) bool { return !v.starting })
	}
	switch name {
	case getToolsName:
		return v.getDynamicTools(args), nil
	case callToolName:
		return h.callDynamicTool(ctx, v, args, jsonrpc.Field(params, "_meta"), jsonrpc.Field(params, "task"))
	}
	if v.search == nil { // gone while it waited (a reload turned it off)
		h.auditMiss(ctx, name, arguments)
		return nil, errorf(codeMethodNotFound, "Tool not found: "+name)
	}
	return v.searchDynamicTools(args), nil
}

// callRoute calls the upstream tool r names with the client's params,
// only the name changed to the upstream's.
func (h *Hub) callRoute(ctx context.Context, r route, params, arguments json.RawMessage) (json.RawMessage, error) {
	up, err := rename(params, "name", r.name)
	if err != nil {
		return nil, err
	}
	return h.forward(ctx, call{method: policy.MethodToolsCall, server: r.server, name: r.name, args: arguments, params: up})
}

// stringField reads a top-level string of params without decoding the
// rest; ok is false when params is no object or the value no string.
func stringField(params json.RawMessage, key string) (string, bool) {
	raw := jsonrpc.Field(params, key)
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// rename sets params' key to the name the upstream knows, every other
// byte as the client sent it.
func rename(params json.RawMessage, key, name string) (json.RawMessage, error) {
	up, err := setField(params, key, name)
	if err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
	}
	return up, nil
}

func (h *Hub) promptsGet(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	name, ok := stringField(params, "name")
	if !ok || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: prompts/get needs a name")
	}
	r, ok := v.promptRoutes[name]
	if !ok {
		return nil, errorf(codeInvalidParams, "Prompt not found: "+name)
	}
	up, err := rename(params, "name", r.name)
	if err != nil {
		return nil, err
	}
	return h.forward(ctx, call{method: policy.MethodPromptsGet, server: r.server, name: r.name, args: jsonrpc.Field(params, "arguments"), params: up})
}

func (h *Hub) resourcesRead(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	uri, ok := stringField(params, "uri")
	if !ok || uri == "" {
		return nil, errorf(codeInvalidParams, "invalid params: resources/read needs a uri")
	}
	s := v.resolveResource(uri)
	if s == nil {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	}
	return h.forward(ctx, call{method: policy.MethodResourcesRead, server: s, name: uri, params: params})
}

// complete routes completion/complete by its reference: a prompt by its
// exposed name, a resource template by its URI template.
func (h *Hub) complete(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["ref"], &ref) != nil {
		return nil, errorf(codeInvalidParams, "invalid params: completion/complete needs a ref")
	}
	var s *upstream.Server
	switch ref.Type {
	case "ref/prompt":
		r, ok := v.promptRoutes[ref.Name]
		if !ok {
			return nil, errorf(codeInvalidParams, "Prompt not found: "+ref.Name)
		}
		s = r.server
		ref.Name = r.name
		p["ref"], _ = json.Marshal(map[string]string{"type": ref.Type, "name": r.name})
	case "ref/resource":
		for _, t := range v.templateRoutes {
			if t.template.Raw() == ref.URI {
				s = t.server
				break
			}
		}
		if s == nil {
			s = v.resolveResource(ref.URI)
		}
		if s == nil {
			return nil, errorf(codeInvalidParams, "Resource template not found: "+ref.URI)
		}
	default:
		return nil, errorf(codeInvalidParams, "invalid params: unknown ref type "+ref.Type)
	}
	h.routed(ctx, s, cmp.Or(ref.Name, ref.URI), "", "")
	return h.request(ctx, s, "completion/complete", p, h.snapshotOf(ctx).cfg.CallTimeoutFor(s.Config))
}
