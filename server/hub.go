package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/inflight"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/observe"
	"github.com/dynamic-mcp/dynamic-mcp/server/panics"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/ratelimit"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/server/tasks"
	"github.com/dynamic-mcp/dynamic-mcp/server/validateargs"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Version is the hub's version, reported to clients and upstreams.
var Version = "dev"

// Hub is the MCP server the client talks to, in front of a Manager's
// upstreams.
type Hub struct {
	mgr    *upstream.Manager
	logger *slog.Logger
	// routes are the client sessions, and where upstream events go.
	routes *routes.Table[client]
	tasks  *tasks.Table[client]
	rounds *rounds.Rounds // the 2026-07-28 rounds: states sealed, calls held, questions put
	// inbox holds the calls waiting for a person and the grants made:
	// kept across reloads, not in the snapshot.
	inbox *approve.Inbox
	rates *ratelimit.Limiter // the loop guards' counters (policy rate:), kept across reloads
	obs   *observe.Traffic   // the observer, and every hop upstream (server/observe)
	// results are the tool results cut to fit max_result, kept whole
	// for their sessions to read (resultcap; Options.Results).
	results *resultcap.Store
	// inflight are the budgets of bytes of client requests in flight,
	// per caller and in all (server/inflight).
	inflight *inflight.Budgets
	// argSchemas are the tools' input schemas, compiled on first use
	// (server/validateargs).
	argSchemas validateargs.Schemas
	// protocol answers the handshake and what else of the protocol is
	// not the hub's own; its serverInfo has the Version of when New ran.
	protocol clients.Protocol

	// started is when New ran: a flat client's handshake waits for the
	// upstreams starting up to startup_wait from it (firstlist.go).
	started time.Time

	snap   atomic.Pointer[snapshot] // never nil after New; replaced whole by swap
	swapMu sync.Mutex               // one swap at a time, so no change is lost

	panics  *panics.Counter            // recovered panics, ever (see Panics)
	listens *listen.Notifier[*session] // list_changed and the 2026-07-28 listens
	audits  *audit.Stats               // of every trail the hub opened
	// stdioOut is the file the stdio face writes the conversation to, when
	// it is one: no audit trail may be opened on it (see audit.Open).
	stdioOut atomic.Pointer[os.FileInfo]

	// ctx ends at Close: it stops the requests from upstreams that the hub
	// is passing to clients, and the unsubscribes it sends for sessions
	// that ended.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{} // closed at Close: every goroutine of spawn ends

	spawnMu sync.Mutex     // orders spawn against Close; guards closed
	closed  bool           // Close has begun: spawn starts nothing
	wg      sync.WaitGroup // every goroutine of spawn; Close waits for it
	once    sync.Once
}

// NewWith builds the hub for cfg's upstreams in mgr, with opts, and opens
// its audit trail. The hub is whole when it returns; nothing reaches it
// from upstreams before Run, which keeps its view current and passes on
// what upstreams send.
func NewWith(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger, opts Options) (*Hub, error) {
	h := &Hub{
		mgr:      mgr,
		logger:   logger,
		started:  time.Now(),
		stop:     make(chan struct{}),
		tasks:    tasks.New[client](logger),
		rates:    ratelimit.New(opts.Store),
		results:  opts.Results,
		inflight: inflight.New(inflight.MaxCallerBytes, inflight.MaxBytes),
		panics:   panics.New(logger),
		obs:      new(observe.Traffic),
	}
	h.obs.Config = func() *config.Config { return h.snapshot().cfg }
	h.routes = routes.New(routes.Options[client]{Logger: logger, Manager: mgr, Spawn: h.spawn, Stop: h.stop, Observer: h.obs.Observer,
		Redact:        func(p json.RawMessage) json.RawMessage { return h.snapshot().cfg.RedactSecrets(p) },
		HidesResource: func(uri string) bool { return h.snapshot().view.HidesResource(uri) },
		Unsubscribe: func(s *upstream.Server, uri string) error {
			_, err := h.obs.Request(h.ctx, nil, nil, s, "resources/unsubscribe", map[string]string{"uri": uri}, h.config().Settings.ListTimeout)
			return err
		},
		Ask: func(ctx context.Context, e routes.ServerRequest, params json.RawMessage) (json.RawMessage, bool, error) {
			p := h.rounds.Held(e.Owner, e.Server, e.Part)
			if p == nil {
				return nil, false, nil
			}
			res, err := p.Ask(ctx, e.Method, params)
			return res, true, err
		},
		TaskStatus: func(ctx context.Context, s *upstream.Server, params json.RawMessage) (client, json.RawMessage, bool) {
			return h.tasks.Status(s, upstream.ConnOf(ctx), params)
		},
		Ended: func(sess client) {
			h.tasks.ForgetSession(sess)
			h.mgr.Release(sess) // its own connections (isolation: per-session)
			h.rates.ForgetSession(sess.ID())
			if !sess.sessionless() { // a credential's grants outlive each of its requests
				h.inbox.EndSession(caller(sess))
			}
		},
		Describe: func(sess client) routes.SessionInfo { return sess.info(h.config()) },
	})
	h.obs.Hops = newHopChain(h.routes.Request)
	if h.results == nil {
		h.results = resultcap.New(resultcap.Options{Logger: logger})
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	var err error
	if h.rounds, err = rounds.New(rounds.Hub{Context: h.ctx, Spawn: h.spawn, Send: h.obs, AskClient: h.routes.Request,
		Release: h.mgr.Release, HoldProgress: h.routes.HoldProgress}); err != nil {
		return nil, err
	}
	h.audits = opts.Audits
	if h.audits == nil {
		h.audits = new(audit.Stats)
	}
	trail, err := audit.Open(cfg, h.logger, h.audits, h.stdioOut.Load(), h.spawn)
	if err != nil {
		return nil, err
	}
	h.inbox = approve.New(approve.Options{Store: opts.Store, Logger: logger, Context: h.ctx, Stop: h.stop, Spawn: h.spawn, Safely: h.safely})
	h.protocol = clients.Protocol{Info: mcp.Implementation{Name: hubName, Version: Version}, LevelSet: h.routes.SetLogLevel}
	h.listens = listen.New(listen.Options[*session]{Logger: logger, Spawn: h.spawn, Stop: h.stop,
		Sessions: func(k listen.Kind, f func(*session, uint64)) {
			snap := h.snapshot()
			for _, c := range h.routes.List() {
				// The table lists sessions alone: a request with no
				// session (oneRequest) is unlisted, and has no listens.
				if sess, ok := c.(*session); ok {
					f(sess, snap.viewOf(sess.profileIn(snap.cfg)).hashes()[k])
				}
			}
		},
		View: func(sess *session, msg *jsonrpc.Message) (listen.Hashes, func(context.Context, string) error) {
			snap := h.snapshot()
			v, req := snap.viewOf(sess.profileIn(snap.cfg)), newRequest(h, sess, snap, msg)
			return v.hashes(), func(ctx context.Context, uri string) error {
				return h.routes.SubscribeURI(ctx, subscriber(h, req, v), uri, true)
			}
		},
		Unsubscribe: func(sess *session, uris []string) { h.routes.Unsubscribe(sess, uris) },
	})
	pol := policy.New(cfg)
	snap := newSnapshot(cfg, pol, nil, trail).withViews(mgr)
	snap.chain, snap.requests = h.newChain(snap), h.newRequestChain(snap)
	h.snap.Store(snap)
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
	next := newSnapshot(cfg, pol, nil, cur.audit).withViews(h.mgr)
	if cur.cfg.AuditPath() != cfg.AuditPath() || cur.cfg.Audit.Arguments != cfg.Audit.Arguments || cur.cfg.Audit.Required != cfg.Audit.Required {
		if trail, err := audit.Open(cfg, h.logger, h.audits, h.stdioOut.Load(), h.spawn); err != nil {
			h.logger.Error("reload: keeping the audit trail where it was", "err", err)
		} else {
			next.audit = trail
		}
	}
	next.chain, next.requests = h.newChain(next), h.newRequestChain(next)
	h.swap(next)
	h.rates.Retain(cfg)
	h.announce(cur, next)
	h.routes.UnsubscribeHidden(next.view.HidesResource)
}

// Sessions is the table of client sessions, for the faces, the inspector
// and /metrics: the sessions open and the notifications dropped.
func (h *Hub) Sessions() routes.Sessions { return h.routes }

// Inbox is the approval inbox: the calls waiting for a person and the
// grants in force, for the inspector and the approval commands.
func (h *Hub) Inbox() *approve.Inbox { return h.inbox }

// Traffic is the hub's traffic as observers see it: its Observe makes an
// observer see it from now on.
func (h *Hub) Traffic() *observe.Traffic { return h.obs }

// Inflight are the hub's budgets of bytes of client requests in flight,
// per caller and in all, for the faces' sessions.
func (h *Hub) Inflight() *inflight.Budgets { return h.inflight }

// Panics counts the panics the hub and its faces recovered from: the
// faces report theirs to it, /metrics reads it.
func (h *Hub) Panics() *panics.Counter { return h.panics }

// config is the current config.
func (h *Hub) config() *config.Config { return h.snapshot().cfg }

// Run starts the hub's event loop and returns at once. Until Close, the
// loop rebuilds the view whenever an upstream changes and passes what
// upstreams send to the client sessions it is for. It never waits for a
// client: notifications are queued by the sessions, which drop what does
// not fit, and each request runs on its own goroutine (the manager caps
// them per upstream).
func (h *Hub) Run() {
	if h.inbox.Shared() {
		h.spawn(h.inbox.WatchGrants)
		h.spawn(h.inbox.WatchPending)
	}
	h.spawn(func() {
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

// safely runs f, logging and counting a panic instead of crashing, so
// one bad message cannot stop the loop.
func (h *Hub) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			h.panics.Recovered(what, r, debug.Stack())
		}
	}()
	f()
}

// route passes one event from an upstream on.
func (h *Hub) route(e upstream.Event) {
	switch e.Kind {
	case upstream.EventNotification:
		h.routes.Notification(e)
	case upstream.EventRequest:
		h.spawn(func() {
			ctx, cancel := context.WithCancel(e.Context)
			defer cancel()
			defer context.AfterFunc(h.ctx, cancel)()
			res, err := json.RawMessage(nil), errors.New("dynamic-mcp: internal error")
			h.safely("pass an upstream request on", func() { res, err = h.routes.Request(ctx, routes.RequestOf(e)) })
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
			next.audit = audit.Closed(h.audits, cur.cfg.Audit.Required)
			// Its audit stages admit and write for the closed trail.
			next.chain, next.requests = h.newChain(&next), h.newRequestChain(&next)
			h.swap(&next) // retires the trail: closed when its last holder is done
		}
		h.swapMu.Unlock()
		h.wg.Wait()
		err = cur.audit.Err()
	})
	return err
}

// spawn runs f on a goroutine that Close waits for, and reports whether
// it did: once Close has begun it starts nothing. f must end when h.stop
// is closed or h.ctx is done. A panic in f is recovered and counted
// (safely), as a request's is: the hub goes on.
func (h *Hub) spawn(f func()) bool {
	h.spawnMu.Lock()
	defer h.spawnMu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Go(func() { h.safely("a goroutine of the hub", f) })
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
	next.withViews(h.mgr)
	h.swap(&next)
	h.announce(cur, &next)
	h.routes.UnsubscribeHidden(next.view.HidesResource)
}

// announce logs the new problems of next's view and tells clients which
// of their lists differ from cur's, in any view (the whole config's or a
// profile's).
func (h *Hub) announce(cur, next *snapshot) {
	old, v := cur.view, next.view
	for _, p := range v.Problems {
		if !slices.Contains(old.Problems, p) {
			h.logger.Error(p)
		}
	}
	for _, w := range v.Warnings {
		if !slices.Contains(old.Warnings, w) {
			h.logger.Warn(w)
		}
	}
	for k := range listen.Kinds {
		changed := old.hashes()[k] != v.hashes()[k]
		for name, pv := range next.profiles {
			changed = changed || cur.viewOf(name).hashes()[k] != pv.hashes()[k]
		}
		if changed {
			h.listens.Changed(k)
		}
	}
}

// ToolsListFor builds the tools/list result mode would give, for comparing
// the modes' sizes.
func (h *Hub) ToolsListFor(mode config.Mode) json.RawMessage {
	return buildView(mode, h.config().Settings.Search, h.config().Settings.MaxTools, h.mgr, nil).ToolsList
}

// Problems lists what the current view had to hide, such as colliding names.
func (h *Hub) Problems() []string { return h.snapshot().view.Problems }

// Warnings lists what the current view found doubtful, such as policy
// rules naming arguments their tools do not have.
func (h *Hub) Warnings() []string { return h.snapshot().view.Warnings }

// RateLimited is how many calls each rule's rate limit found over it
// since New, by the rule's group ("" for a global rule) and then its
// name: counters that never go down, for /metrics.
func (h *Hub) RateLimited() map[string]map[string]uint64 { return h.rates.Limited() }

// RateBuckets is how many loop-guard counters the hub keeps now, and how
// many it dropped to make room since New, for /metrics.
func (h *Hub) RateBuckets() (buckets int, evictions uint64) { return h.rates.Buckets() }

// New builds the hub for cfg's upstreams in mgr (NewWith) with its state
// in this process.
func New(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger) (*Hub, error) {
	return NewWith(cfg, mgr, logger, Options{})
}

// Options are what a Hub is given beyond its config and upstreams.
type Options struct {
	// Store is the state every replica shares (store: postgres://...):
	// grants, pending approvals and rate counters are kept there. nil:
	// here. The caller (cmd) opens it and closes it after Close.
	Store SharedState
	// Results keep the tool results cut to fit max_result for their
	// sessions to read back; cmd makes it to read its Stats for /metrics.
	// nil: the hub makes its own.
	Results *resultcap.Store
	// Audits count the records lost by every audit trail the hub opens
	// (for /metrics); nil: the hub's own.
	Audits *audit.Stats
}

// SharedState is the store every replica shares as the hub uses it:
// grants and pending approvals (values, changes under a lock, notices to
// the replicas) and rate buckets.
type SharedState interface {
	shared.Tx
	shared.Locker
	shared.Notifier
	shared.Limiter
}
