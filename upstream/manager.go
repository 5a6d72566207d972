package upstream

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Group is a configured group with its servers, in config order.
type Group struct {
	Config  *config.Group
	Servers []*Server
}

// Manager owns every upstream server of a config. What the servers send
// on their own initiative reaches the hub through Events, and changes of
// their state or lists through Changes; both exist from New on, so nothing
// a server sends can reach a hub that is not whole yet.
type Manager struct {
	logger    *slog.Logger
	pins      *Pins
	lists     *toolCache                             // the tools each server listed last (toolcache.go)
	caps      atomic.Pointer[mcp.ClientCapabilities] // declared to shared connections
	tokens    *auth.Store
	shared    SharedState   // nil: none; Options.Store
	logLevel  atomic.Value  // mcp.LoggingLevel asked by the client, "" for none
	changes   chan struct{} // coalesced: one pending signal is enough
	events    chan Event    // bounded: see emit
	routeWait time.Duration // the constant routeWait, changed by tests

	dropped      atomic.Uint64 // notifications dropped since New
	droppedSince atomic.Uint64 // ... since they were last logged
	dropLogged   atomic.Int64  // when they were last logged, in Unix ns

	groups atomic.Pointer[[]*Group] // replaced whole by Apply
	// cfg is the config applied last: its secrets are redacted from why a
	// server failed (see redact), which clients and the inspector read.
	cfg atomic.Pointer[config.Config]

	procs    procSlots        // settings.max_session_processes
	procIdle atomic.Int64     // settings.session_process_idle
	now      func() time.Time // time.Now, but in tests; for backoff and idleness
	reaper   sync.WaitGroup   // reapIdle

	mu       sync.Mutex // guards ctx, cancel, retiring, closed
	ctx      context.Context
	cancel   context.CancelFunc
	retiring sync.WaitGroup // servers Apply replaced, still stopping
	closed   bool
}

// New builds the manager of cfg's servers without starting any, with its
// state in the state directory.
func New(cfg *config.Config, logger *slog.Logger) *Manager {
	return NewWith(cfg, logger, Options{})
}

// Options are what a Manager is given beyond its config.
type Options struct {
	// Store is the state every replica shares (store: postgres://...):
	// the upstream sign-ins, the tool pins and the tools each server
	// listed last are kept there in place of the state directory's
	// files. nil: the files. The caller opens it and closes it after
	// Close.
	Store SharedState
}

// SharedState is the store every replica shares as the manager uses it:
// the sign-ins' records (auth.SharedDB), the pins under a held lock, and
// a notice to the replicas of a pin accepted.
type SharedState interface {
	auth.SharedDB
	PinDB
}

// NewWith is New with opts.
func NewWith(cfg *config.Config, logger *slog.Logger, opts Options) *Manager {
	m := &Manager{
		logger:    logger,
		changes:   make(chan struct{}, 1),
		events:    make(chan Event, eventBuffer),
		routeWait: routeWait,
		pins:      NewPins(filepath.Join(cfg.StateDir, "pins")),
		lists:     &toolCache{dir: filepath.Join(cfg.StateDir, "tools")},
		tokens:    auth.NewStore(cfg.TokenDir()),
		now:       time.Now,
	}
	if opts.Store != nil {
		m.shared = opts.Store
		m.pins.UseSharedStore(opts.Store)
		m.lists.shared = opts.Store
		m.tokens = auth.NewSharedStore(cfg.TokenDir(), opts.Store)
	}
	m.tokens.SetLogger(logger)
	m.cfg.Store(cfg)
	m.applySessionSettings(cfg)
	m.logLevel.Store(mcp.LoggingLevel(""))
	declared := DeclaredCapabilities()
	m.caps.Store(&declared)
	groups := m.build(cfg, nil)
	m.groups.Store(&groups)
	return m
}

// build makes the groups of cfg, reusing from old the servers whose
// configuration did not change.
func (m *Manager) build(cfg *config.Config, old map[string]*Server) []*Group {
	var groups []*Group
	for _, g := range cfg.Groups {
		group := &Group{Config: g}
		for _, sc := range g.Servers {
			s, ok := old[sc.ID()]
			if !ok || !sameServer(s, sc, cfg.Settings) || s.onChange != g.PinOnChange {
				s = newServer(m, sc, cfg.Settings, g.PinOnChange)
			}
			s.callTimeout.Store(int64(cfg.CallTimeoutFor(sc)))
			s.reconnectWait.Store(int64(cfg.Settings.StartupWait))
			group.Servers = append(group.Servers, s)
		}
		groups = append(groups, group)
	}
	return groups
}

// sameServer reports whether s runs exactly what sc and settings ask for,
// so that a reload can leave it and its session alone.
func sameServer(s *Server, sc *config.Server, settings config.Settings) bool {
	a, b := *s.Config, *sc
	a.Line, b.Line, a.CommandLine, b.CommandLine = 0, 0, 0, 0
	return reflect.DeepEqual(a, b) && s.settings == settings.ForServer()
}

// Groups are the groups in config order. The slice is never modified.
func (m *Manager) Groups() []*Group { return *m.groups.Load() }

// Start connects to every enabled server in parallel and returns at once;
// each server's outcome arrives on Changes. After Close it does nothing.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.ctx != nil {
		return
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	m.reaper.Go(func() { m.reapIdle(m.ctx) })
	for _, s := range m.Servers() {
		if s.Config.Startable() {
			s.start(m.ctx)
		}
	}
}

// Apply moves the manager to cfg: servers whose configuration changed are
// restarted, new ones started, removed ones stopped, and the rest keep
// their sessions. Stopped servers finish their close ladder in the
// background.
func (m *Manager) Apply(cfg *config.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	old := map[string]*Server{}
	for _, s := range m.Servers() {
		old[s.Config.ID()] = s
	}
	m.cfg.Store(cfg)
	groups := m.build(cfg, old)
	m.applySessionSettings(cfg)
	kept := map[*Server]bool{}
	for _, g := range groups {
		for _, s := range g.Servers {
			if old[s.Config.ID()] == s {
				kept[s] = true
			} else if s.Config.Startable() && m.ctx != nil {
				s.start(m.ctx)
			}
		}
	}
	m.groups.Store(&groups)
	for _, s := range old {
		if !kept[s] {
			m.logger.Info("stopping upstream removed or changed by reload", "upstream", s.Config.ID())
			m.retiring.Add(1)
			go func() {
				defer m.retiring.Done()
				s.close()
			}()
		}
	}
	m.signal()
}

// Events receives what the servers send on their own initiative:
// notifications, and requests to the client that must be answered with
// Event.Reply. Its reader calls Event.Routed once it has passed each
// event on. The channel is bounded and never closed. Notifications that find it full are
// dropped and counted (see Dropped); requests wait for room until their
// deadline. Its reader must never block on a client.
func (m *Manager) Events() <-chan Event { return m.events }

// SetClientCapabilities sets what shared connections declare in their
// handshake from their next dial on (DeclaredCapabilities until then): a
// command without a client declares none. Nothing waits for it.
func (m *Manager) SetClientCapabilities(caps mcp.ClientCapabilities) { m.caps.Store(&caps) }

// LogLevel is the level the client asked upstreams to log at.
func (m *Manager) LogLevel() mcp.LoggingLevel { return m.logLevel.Load().(mcp.LoggingLevel) }

// SetLogLevel asks every ready server that logs to log at level, and
// servers that connect later too.
func (m *Manager) SetLogLevel(level mcp.LoggingLevel) {
	m.logLevel.Store(level)
	for _, s := range m.Servers() {
		s.applyLogLevel(level)
	}
}

// Notify sends a notification to every ready server. It returns at once:
// each server sends it in the background.
func (m *Manager) Notify(method string, params map[string]any) {
	for _, s := range m.Servers() {
		s.notify(method, params)
	}
}

// Pins are where the manager's servers pin their tools.
func (m *Manager) Pins() *Pins { return m.pins }

// RecheckPins applies the tool pins again on every server, after they were
// accepted by another process.
func (m *Manager) RecheckPins() {
	for _, s := range m.Servers() {
		s.RecheckPins()
	}
}

// Changes receives a value after any server's state or lists changed.
// Signals coalesce: one receive may stand for several changes.
func (m *Manager) Changes() <-chan struct{} { return m.changes }

func (m *Manager) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Servers lists every server of every group, in config order.
func (m *Manager) Servers() []*Server {
	var out []*Server
	for _, g := range m.Groups() {
		out = append(out, g.Servers...)
	}
	return out
}

// Settled reports whether no server is still starting.
func (m *Manager) Settled() bool {
	for _, s := range m.Servers() {
		if s.Status().State == StateStarting && s.Config.Startable() {
			return false
		}
	}
	return true
}

// WaitSettled waits until no server is still starting, or ctx ends.
func (m *Manager) WaitSettled(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !m.Settled() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops every server, in parallel, and waits for them, including
// those a reload retired.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.cancel != nil {
		m.cancel()
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range m.Servers() {
		wg.Go(s.close)
	}
	wg.Wait()
	m.retiring.Wait()
	m.reaper.Wait()
	if n := m.droppedSince.Swap(0); n > 0 {
		m.logger.Warn("upstream notifications dropped: the hub was not keeping up", "dropped", n)
	}
	return nil
}
