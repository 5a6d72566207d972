package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
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

	// ctx ends at Close: it stops the requests from upstreams that the hub
	// is passing to clients.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	wg     sync.WaitGroup // the event loop and the requests it started
	once   sync.Once
}

// New builds the hub for cfg's upstreams in mgr and opens its audit trail.
// The hub is whole when New returns; nothing reaches it from upstreams
// before Run, which keeps its view current and passes on what upstreams
// send.
func New(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger) (*Hub, error) {
	audit, err := openAudit(cfg.AuditPath(), cfg.Audit.Arguments, logger)
	if err != nil {
		return nil, err
	}
	h := &Hub{
		mgr:    mgr,
		logger: logger,
		stop:   make(chan struct{}),
		routes: newRoutes(),
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
	cur := h.snapshot()
	pol := policy.New(cfg)
	next := newSnapshot(cfg, pol, buildView(cfg.Mode, cfg.Settings.Search, h.mgr, pol), cur.audit)
	if cur.cfg.AuditPath() != cfg.AuditPath() || cur.cfg.Audit.Arguments != cfg.Audit.Arguments {
		if audit, err := openAudit(cfg.AuditPath(), cfg.Audit.Arguments, h.logger); err != nil {
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
	h.wg.Go(func() {
		for {
			select {
			case <-h.stop:
				return
			case <-h.mgr.Changes():
				h.safely("refresh the view", h.refresh)
			case e := <-h.mgr.Events():
				h.safely("route an upstream event", func() { h.route(e) })
				e.Routed() // the call it came during may return now
			}
		}
	})
}

// safely runs f, logging instead of crashing on a panic, so one bad
// message cannot stop the loop.
func (h *Hub) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			h.logger.Error("panic in the hub's event loop", "while", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

// route passes one event from an upstream on.
func (h *Hub) route(e upstream.Event) {
	switch e.Kind {
	case upstream.EventNotification:
		h.upstreamNotification(e.Context, e.Server, e.Method, e.Params)
	case upstream.EventRequest:
		h.wg.Go(func() {
			ctx, cancel := context.WithCancel(e.Context)
			defer cancel()
			defer context.AfterFunc(h.ctx, cancel)()
			res, err := json.RawMessage(nil), errors.New("dynamic-mcp: internal error")
			h.safely("pass an upstream request on", func() { res, err = h.upstreamRequest(ctx, e.Server, e.Method, e.Params) })
			e.Reply(res, err)
		})
	}
}

// Close stops Run, waits for it and for the requests it passes on, and
// closes the audit trail once its last writer is done. It does not close
// the upstreams.
func (h *Hub) Close() error {
	var err error
	h.once.Do(func() {
		close(h.stop)
		h.cancel()
		h.wg.Wait()
		err = h.snapshot().audit.retire()
	})
	return err
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
