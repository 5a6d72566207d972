package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Version is the hub's version, reported to clients and upstreams.
var Version = "dev"

// Hub is the MCP server the client talks to, in front of a Manager's
// upstreams.
type Hub struct {
	cfg    atomic.Pointer[config.Config] // replaced whole by SetConfig
	mgr    *upstream.Manager
	logger *slog.Logger
	mcp    *mcpserver.MCPServer

	routes    *routes
	policy    atomic.Pointer[policy.Policy]
	audit     atomic.Pointer[auditLog] // nil when the trail is off
	view      atomic.Pointer[view]     // the current view; replaced whole on change
	refreshMu sync.Mutex               // one rebuild at a time, so no change is lost

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// New builds the hub for cfg's upstreams in mgr and opens its audit trail.
// Run keeps its view current.
func New(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger) (*Hub, error) {
	h := &Hub{
		mgr:    mgr,
		logger: logger,
		stop:   make(chan struct{}),
		routes: newRoutes(),
	}
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
		mcpserver.WithLogging(),
		mcpserver.WithHooks(hooks),
	)
	mgr.SetHandler(h)
	audit, err := openAudit(cfg.AuditPath(), cfg.Audit.Arguments)
	if err != nil {
		return nil, err
	}
	h.audit.Store(audit)
	h.cfg.Store(cfg)
	h.policy.Store(policy.New(cfg))
	h.view.Store(buildView(cfg.Mode, mgr))
	return h, nil
}

// SetConfig switches the hub to cfg after a reload (mode, page size,
// timeouts) and tells clients what changed for them. The manager is moved
// to cfg separately, by its Apply.
func (h *Hub) SetConfig(cfg *config.Config) {
	old := h.cfg.Swap(cfg)
	h.policy.Store(policy.New(cfg))
	if old.AuditPath() != cfg.AuditPath() || old.Audit.Arguments != cfg.Audit.Arguments {
		if audit, err := openAudit(cfg.AuditPath(), cfg.Audit.Arguments); err != nil {
			h.logger.Error("reload: keeping the audit trail where it was", "err", err)
		} else {
			h.audit.Swap(audit).close()
		}
	}
	h.refresh()
}

func (h *Hub) config() *config.Config { return h.cfg.Load() }

// Run rebuilds the view whenever an upstream changes and tells the clients
// whose lists changed, until Close. It returns at once.
func (h *Hub) Run() {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			select {
			case <-h.stop:
				return
			case <-h.mgr.Changes():
				h.refresh()
			}
		}
	}()
}

// Close stops Run, waits for it and closes the audit trail. It does not
// close the upstreams.
func (h *Hub) Close() error {
	var err error
	h.once.Do(func() {
		close(h.stop)
		h.wg.Wait()
		err = h.audit.Load().close()
	})
	return err
}

// refresh rebuilds the view and sends list_changed for what changed.
func (h *Hub) refresh() {
	h.refreshMu.Lock()
	defer h.refreshMu.Unlock()
	old := h.view.Load()
	v := buildView(h.config().Mode, h.mgr)
	h.view.Store(v)
	for _, p := range v.problems {
		if !slices.Contains(old.problems, p) {
			h.logger.Error(p)
		}
	}
	notify := func(method string, changed bool) {
		if changed {
			h.mcp.SendNotificationToAllClients(method, nil)
		}
	}
	notify("notifications/tools/list_changed", !bytes.Equal(old.toolsList, v.toolsList))
	notify("notifications/prompts/list_changed", !rawListsEqual(old.prompts, v.prompts))
	notify("notifications/resources/list_changed",
		!rawListsEqual(old.resources, v.resources) || !rawListsEqual(old.templates, v.templates))
}

func rawListsEqual(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// ToolsListFor builds the tools/list result mode would give, for comparing
// the modes' sizes.
func (h *Hub) ToolsListFor(mode config.Mode) json.RawMessage {
	return buildView(mode, h.mgr).toolsList
}

// Problems lists what the current view had to hide, such as colliding names.
func (h *Hub) Problems() []string { return h.view.Load().problems }

// handle answers one request. It returns the whole response message.
func (h *Hub) handle(ctx context.Context, msg *envelope, raw json.RawMessage) []byte {
	result, err := h.dispatch(ctx, msg, raw)
	if errors.Is(err, errDelegated) {
		return result
	}
	if err != nil {
		return errorResponse(msg.ID, toRPCError(err))
	}
	if modern(msg.Params) {
		result = decorateModern(msg.Method, result)
	}
	return resultResponse(msg.ID, result)
}

// errDelegated marks a response mcp-go produced whole.
var errDelegated = errors.New("delegated")

func (h *Hub) dispatch(ctx context.Context, msg *envelope, raw json.RawMessage) (json.RawMessage, error) {
	v := h.view.Load()
	size := h.config().Settings.PageSize
	switch msg.Method {
	case "tools/list":
		return v.toolsList, nil
	case "tools/call":
		return h.toolsCall(ctx, v, msg.Params)
	case "prompts/list":
		return page("prompts", v.prompts, msg.Params, size)
	case "prompts/get":
		return h.promptsGet(ctx, v, msg.Params)
	case "resources/list":
		return page("resources", v.resources, msg.Params, size)
	case "resources/templates/list":
		return page("resourceTemplates", v.templates, msg.Params, size)
	case "resources/read":
		return h.resourcesRead(ctx, v, msg.Params)
	case "completion/complete":
		return h.complete(ctx, v, msg.Params)
	case "resources/subscribe", "resources/unsubscribe":
		sess, ok := mcpserver.ClientSessionFromContext(ctx).(*session)
		if !ok {
			return nil, errorf(codeInternalError, "no session")
		}
		return h.subscribe(ctx, sess, v, msg.Params, msg.Method == "resources/subscribe")
	case "logging/setLevel":
		defer h.setLogLevel()
	}
	resp := h.mcp.HandleMessage(ctx, raw)
	if resp == nil {
		return nil, errDelegated
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return errorResponse(msg.ID, errorf(codeInternalError, "encode response: "+err.Error())), errDelegated
	}
	return b, errDelegated
}

func (h *Hub) toolsCall(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return nil, errorf(codeInvalidParams, "invalid params: tools/call needs an object with name")
	}
	var name string
	if err := json.Unmarshal(p["name"], &name); err != nil || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: name must be a non-empty string")
	}
	if v.mode == config.ModeFlat {
		r, ok := v.flatRoutes[name]
		if !ok {
			h.auditMiss(ctx, name, p["arguments"])
			return nil, errorf(codeMethodNotFound, "Tool not found: "+name)
		}
		p["name"], _ = json.Marshal(r.name)
		return h.forward(ctx, call{method: policy.MethodToolsCall, server: r.server, name: r.name, args: p["arguments"], params: p})
	}
	var args dynamicArgs
	if a := p["arguments"]; len(a) > 0 && string(a) != "null" {
		if err := json.Unmarshal(a, &args); err != nil {
			return toolError("invalid arguments: " + err.Error()), nil
		}
	}
	switch name {
	case getToolsName:
		return v.getDynamicTools(args), nil
	case callToolName:
		return h.callDynamicTool(ctx, v, args, p["_meta"])
	}
	h.auditMiss(ctx, name, p["arguments"])
	return nil, errorf(codeMethodNotFound, "Tool not found: "+name)
}

func (h *Hub) promptsGet(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["name"], &name) != nil || name == "" {
		return nil, errorf(codeInvalidParams, "invalid params: prompts/get needs a name")
	}
	r, ok := v.promptRoutes[name]
	if !ok {
		return nil, errorf(codeInvalidParams, "Prompt not found: "+name)
	}
	p["name"], _ = json.Marshal(r.name)
	return h.forward(ctx, call{method: policy.MethodPromptsGet, server: r.server, name: r.name, args: p["arguments"], params: p})
}

func (h *Hub) resourcesRead(ctx context.Context, v *view, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	var uri string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["uri"], &uri) != nil || uri == "" {
		return nil, errorf(codeInvalidParams, "invalid params: resources/read needs a uri")
	}
	s := v.resolveResource(uri)
	if s == nil {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	}
	return h.forward(ctx, call{method: policy.MethodResourcesRead, server: s, name: uri, params: p})
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
	return s.Request(ctx, "completion/complete", p, h.config().CallTimeoutFor(s.Config))
}
