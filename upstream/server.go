package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// State is where a server is in its life.
type State int

const (
	StateStarting State = iota // connecting or fetching its lists
	StateReady                 // serving
	StateFailed                // could not connect, or exited
	StateDisabled              // disabled: true in the config
	StateStopped               // closed by the hub
)

func (s State) String() string {
	return [...]string{"starting", "ready", "failed", "disabled", "stopped"}[s]
}

// LogUnavailable is the message of the record logged at each failed try
// to connect: a command that prints each server's failure itself
// (status, tools) leaves it out.
const LogUnavailable = "upstream unavailable"

// Status is a snapshot of a server for lists, errors and `status`.
type Status struct {
	State           State
	Err             error  // why it failed, the config's secrets redacted (a client reads it)
	ProtocolVersion string // negotiated with this server
	ServerInfo      mcp.Implementation
	Instructions    string
	ReadyIn         time.Duration // from start to ready
	// Since is when the server came to this state (a server failing
	// again and again is down since it first failed); zero while it
	// starts for the first time.
	Since time.Time
	// PinChanged are tools whose definition differs from the one pinned
	// when first seen; withheld unless the group says on_change: warn.
	PinChanged []string
	// Reconnecting says the session of a ready server ended (State is
	// StateFailed, Err says why) and the first try to connect again is
	// under way: its lists stay served (see Lists), and a request waits for
	// the new session within startup_wait (see Request), so that a client
	// is never told that a tool of a group that blinked does not exist.
	// Should that try fail, the lists go with it.
	Reconnecting bool
	// TimedOut counts the tries in a row that ran out of their connect
	// timeout (a slow start), and NextConnect is the next try's, longer
	// (see schedule.timedOut); both 0 unless the last try timed out. A
	// command that starts servers once (status, import) waits for the
	// longer try, as serve would.
	TimedOut    int
	NextConnect time.Duration
}

// ServerConfig is s's config (Config): what the call contract's stages
// read of the server they send a call to (server/call's Upstream).
func (s *Server) ServerConfig() *config.Server { return s.Config }

// Server is one supervised upstream server.
type Server struct {
	Config   *config.Server
	settings config.ServerSettings
	logger   *slog.Logger
	mgr      *Manager // what every server shares: pins, caps, tokens, events
	onChange config.PinOnChange
	// shared is true when every owner's requests go on the shared
	// connection (neither auth: per-user nor isolation: per-session):
	// worked out once, so that a request need not ask whose it is.
	shared bool

	// callTimeout (a time.Duration) bounds the requests the server sends
	// the client; a reload may change it without restarting the server.
	callTimeout atomic.Int64
	// reconnectWait (a time.Duration, settings.startup_wait) is how long a
	// request waits for a server that is reconnecting.
	reconnectWait atomic.Int64
	// outstanding holds a token for each request of the server's still
	// waiting for the client's answer (see maxOutstanding).
	outstanding chan struct{}
	ownersMu    sync.Mutex    // guards owners
	owners      map[Owner]int // the slots of outstanding each owner holds (see maxOutstandingPerOwner)
	notices     chan notice   // to send to the server; see notify
	// stderr bounds what the server's shared connection's children
	// write to stderr in the log, over all their starts: a server that
	// crashes as it starts gets no fresh burst at each restart.
	stderr *transport.StderrBudget

	mu           sync.Mutex // guards the fields below; never held across I/O
	status       Status
	conn         *conn
	raw          Lists      // as the server sent them
	rawGen       uint64     // counts the changes of raw
	pinned       pinVerdict // the pins' verdict on raw.Tools
	pinEpoch     uint64     // counts RecheckPins (see lockWithPins)
	lists        Lists      // raw less the tools pinning withholds
	closing      bool
	ctx          context.Context     // the server's lifetime, from start; nil before
	cancel       context.CancelFunc  // stops run
	refreshing   bool                // a refresh of lists is running
	pendingLists listSet             // lists to fetch again once it is done
	isolated     map[Owner]*isolated // isolation: per-session, by owner (see isolation.go)
	isoSched     *schedule           // backoff of owners' connections failing to start; nil before one did
	isoFail      error               // why the last one failed, nil once one started
	isoRetry     time.Time           // no owner's connection is dialled before, while isoFail
	last         []Item              // the tools of the last run, offered while starting (toolcache.go)
	lastKnown    bool                // last was read: a list need not wait for the server

	cacheMu  sync.Mutex // orders the reads and writes of the server's cached tools; guards cacheSum
	cacheSum [32]byte   // hash of the record cached now

	callMu  sync.Mutex // guards calls and callSeq
	calls   map[uint64]trackedCall
	callSeq uint64

	events *eventLog // what the server sent the hub, and what was routed

	refreshes atomic.Uint64 // refreshes after list_changed, ever
	starts    atomic.Uint64 // tries to connect, ever; see Restarts
	// ignored holds whose sign-ins on file the log has said why they are
	// not used ("" the hub's own; signInIgnored): one line per server and
	// user, not per dial.
	ignoredMu sync.Mutex
	ignored   map[userConn]bool

	wg sync.WaitGroup // run, sendNotices, refreshLoop, applyLogLevel
}

func newServer(m *Manager, cfg *config.Server, settings config.Settings, onChange config.PinOnChange) *Server {
	s := &Server{
		Config:      cfg,
		settings:    settings.ForServer(),
		logger:      m.logger.With("upstream", cfg.ID()),
		mgr:         m,
		onChange:    onChange,
		outstanding: make(chan struct{}, maxOutstanding),
		owners:      map[Owner]int{},
		notices:     make(chan notice, noticeBuffer),
		stderr:      transport.NewStderrBudget(),
		events:      newEventLog(),
		shared:      !cfg.PerUser() && cfg.Isolation != config.IsolationPerSession,
	}
	switch {
	case cfg.Disabled:
		s.status.State = StateDisabled
	case !cfg.Startable():
		// An unset variable or missing secret: unavailable, with the
		// fix, as any failure is; a reload that finds it set replaces
		// the server (its config differs) and starts it.
		s.status = Status{State: StateFailed, Err: cfg.Unavailable()}
	}
	return s
}

// changed reports a change of the server's state or lists to the hub.
func (s *Server) changed() { s.mgr.signal() }

// Status returns the server's current status.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// ProtocolVersion is the protocol version the server's connection
// negotiated (Status), "" before it is up: what observers are told of a
// hop (server/call's Upstream).
func (s *Server) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status.ProtocolVersion
}

// Restarts is how many times the server was started (or connected to)
// again after its first try: after it exited or crashed, or after a try
// that failed. A crash loop shows as a count that keeps rising.
func (s *Server) Restarts() uint64 {
	if n := s.starts.Load(); n > 1 {
		return n - 1
	}
	return 0
}

// Lists returns the server's cached lists; empty unless it is ready or
// reconnecting (see Status.Reconnecting).
func (s *Server) Lists() Lists {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.State != StateReady && !s.status.Reconnecting {
		return Lists{}
	}
	return s.lists
}

// start runs the server until close: connect, retrying on the server's
// schedule; when it is up, wait for it to exit, then connect again.
// Its goroutines are s.wg's: close waits for them. After close it does
// nothing.
func (s *Server) start(parent context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.ctx != nil {
		return
	}
	ctx, cancel := context.WithCancel(parent)
	s.ctx, s.cancel = ctx, cancel
	s.wg.Go(func() {
		defer cancel()
		s.run(ctx)
	})
	s.wg.Go(func() { s.sendNotices(ctx) })
	s.wg.Go(s.loadLast)
}

func (s *Server) run(ctx context.Context) {
	sched := newSchedule(s.Config.Retry, s.configuredConnect())
	for {
		var c *conn
		begin := time.Now()
		err := backoff.RetryNotify(func() error {
			var err error
			var lists Lists
			if c, lists, err = s.connect(ctx, sched.connectTimeout()); err != nil {
				if to, ok := errors.AsType[*connectTimeout](err); ok {
					to.next = sched.timedOut(to.within) // the next try waits longer
				}
				return err
			}
			if !s.setReady(c, lists, time.Since(begin)) {
				return backoff.Permanent(context.Canceled)
			}
			return nil
		}, backoff.WithContext(sched, ctx), func(err error, wait time.Duration) {
			s.setFailed(err)
			s.logger.Error(LogUnavailable, "err", err, "retry_in", wait.Round(100*time.Millisecond))
		})
		if err != nil {
			return // closed
		}
		sched.Reset()
		select {
		case <-c.exited():
			s.setExited(c)
		case <-ctx.Done():
			return
		}
		if c.expired() {
			continue // the server forgot the session: initialize again at once
		}
		// Give a crashing server a moment before the first try again.
		select {
		case <-time.After(jitter(s.Config.Retry.InitialInterval, 0.25)):
		case <-ctx.Done():
			return
		}
	}
}

// setReady makes c the server's connection. It reports false, closing c,
// when the server is being closed.
func (s *Server) setReady(c *conn, lists Lists, took time.Duration) bool {
	pins := s.lockWithPins(lists.Tools)
	if s.closing {
		s.mu.Unlock()
		c.close()
		return false
	}
	s.conn = c
	s.status = Status{
		State:           StateReady,
		ProtocolVersion: c.version,
		ServerInfo:      c.init.ServerInfo,
		Instructions:    c.init.Instructions,
		ReadyIn:         took,
		Since:           time.Now(),
	}
	s.setListsLocked(lists, pins)
	s.last, s.lastKnown = nil, false
	if s.pendingLists != 0 {
		// A list_changed came while the lists were first fetched.
		s.startRefreshLocked()
	}
	s.mu.Unlock()
	s.logPins(pins)
	if level := s.mgr.LogLevel(); level != "" {
		s.applyLogLevel(level)
	}
	s.logger.Info("upstream ready", "protocol", c.version, "tools", len(lists.Tools),
		"prompts", len(lists.Prompts), "resources", len(lists.Resources), "templates", len(lists.Templates),
		"took", took.Round(time.Millisecond))
	s.changed()
	s.saveLast()
	return true
}

func (s *Server) setFailed(err error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	st := Status{State: StateFailed, Err: s.mgr.redact(err), Since: s.failedSince()}
	if to, ok := errors.AsType[*connectTimeout](err); ok {
		st.TimedOut, st.NextConnect = s.status.TimedOut+1, to.next
	}
	s.status = st
	s.mu.Unlock()
	s.changed()
}

// failedSince is Status.Since of a server that fails now, s.mu held.
func (s *Server) failedSince() time.Time {
	if s.status.State == StateFailed && !s.status.Since.IsZero() {
		return s.status.Since
	}
	return time.Now()
}

// setExited records that c's child exited and stops what is left of it.
// Calls pending on it have already failed with the same reason.
func (s *Server) setExited(c *conn) {
	err := c.err()
	s.mu.Lock()
	if s.conn != c || s.closing {
		s.mu.Unlock()
		return
	}
	s.conn = nil
	s.status = Status{State: StateFailed, Err: s.mgr.redact(err), Since: s.failedSince(), Reconnecting: true} // its lists stay: see Status.Reconnecting
	s.mu.Unlock()
	s.logger.Error("upstream session over, reconnecting", "err", err)
	c.close()
	s.changed()
}

// configuredConnect is the server's connect timeout: its own, else
// settings.connect_timeout. Its tries may wait longer (see
// schedule.timedOut).
func (s *Server) configuredConnect() time.Duration {
	return cmp.Or(s.Config.ConnectTimeout, s.settings.ConnectTimeout)
}

// connect starts the server and runs the handshake, bounded by connect,
// then fetches its lists; ctx is the server's lifetime.
func (s *Server) connect(ctx context.Context, connect time.Duration) (*conn, Lists, error) {
	cfg := s.Config
	caps := s.mgr.declared(nil)
	s.starts.Add(1)
	id := newConnID()
	h := serverHandlers{id: id, notify: func(method string, params json.RawMessage) { s.notification(id, "", method, params) }, request: s.sharedRequest,
		paramHeaders: s.paramHeaders, signInIgnored: s.signInIgnored(""), stderr: s.stderr}
	c, err := dial(ctx, cfg, s.settings, connect, caps, s.mgr.tokens, s.logger, h)
	if err != nil && cfg.Transport == "" && ctx.Err() == nil && legacySSE(err) {
		// No transport given, and the server answered the Streamable HTTP
		// initialize with a 4xx: try legacy SSE, as the spec's
		// backwards-compatibility section describes.
		sse := *cfg
		sse.Transport = config.TransportSSE
		if c2, err2 := dial(ctx, &sse, s.settings, connect, caps, s.mgr.tokens, s.logger, h); err2 == nil {
			c, err = c2, nil
		}
	}
	if err != nil {
		return nil, Lists{}, err
	}
	lists, err := s.fetchLists(ctx, c, allLists)
	if err != nil {
		c.close()
		return nil, Lists{}, err
	}
	return c, lists, nil
}

// fetchLists reads every page of each list in `which` that the server's
// capabilities say it has (the others are left empty).
func (s *Server) fetchLists(ctx context.Context, c *conn, which listSet) (Lists, error) {
	caps := c.init.Capabilities
	has := map[string]bool{
		"tools/list":               caps.Tools != nil,
		"prompts/list":             caps.Prompts != nil,
		"resources/list":           caps.Resources != nil,
		"resources/templates/list": caps.Resources != nil,
		"skills/list":              caps.Extensions[SkillsExtension] != nil,
	}
	var lists Lists
	for i, k := range listKinds {
		if !which.has(i) || !has[k.method] {
			continue
		}
		items, err := fetchAll(ctx, k.method, k.field, k.key, func(ctx context.Context, method string, params any) (json.RawMessage, error) {
			ctx, cancel := context.WithTimeout(ctx, s.settings.ListTimeout)
			defer cancel()
			return c.request(ctx, method, params)
		})
		if err != nil {
			var rpcErr *RPCError
			if (k.method == "resources/templates/list" || k.method == "skills/list") && errors.As(err, &rpcErr) {
				// Some servers declare resources but not templates; a
				// skills server that refuses its list serves no skills.
				continue
			}
			return Lists{}, err
		}
		*k.dst(&lists) = items
	}
	return lists, nil
}

// notification handles one notification from the server: a list_changed
// fetches that list again, anything else goes to the hub. It runs on the
// transport's reader and never blocks. user is the user whose own
// connection it came on, "" for the shared one (see Event.User).
func (s *Server) notification(id ConnID, user userConn, method string, params json.RawMessage) {
	if which, ok := listChanged(method); ok {
		s.listChanged(which)
		return
	}
	ctx, owner, _, ambiguous := s.callContext(withConn(context.Background(), id), trackedCall{}, nil)
	if user != "" && owner == nil && !ambiguous {
		owner = user // no call of the user's known: the user's, no one else's
	}
	s.mgr.emit(Event{Kind: EventNotification, Server: s, Method: method, Params: params, Context: ctx, Owner: owner, User: string(user), Ambiguous: ambiguous})
}

// listChanged asks for the lists in which to be fetched again. Requests
// coalesce: at most one refresh runs at a time, and everything asked for
// while it runs is fetched once, after it, however many list_changed the
// server sends meanwhile.
func (s *Server) listChanged(which listSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.pendingLists |= which
	if s.conn != nil {
		// Without a connection, setReady starts the refresh.
		s.startRefreshLocked()
	}
}

// startRefreshLocked starts the refresh loop unless it runs. s.mu is held.
func (s *Server) startRefreshLocked() {
	if s.refreshing || s.closing {
		return
	}
	s.refreshing = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.refreshLoop()
	}()
}

// refreshLoop fetches the pending lists again until none are pending. It
// ends when nothing is pending, or the server has no connection (setReady
// starts it again) or is closing.
func (s *Server) refreshLoop() {
	for {
		s.mu.Lock()
		which, c, ctx := s.pendingLists, s.conn, s.ctx
		if which == 0 || c == nil || s.closing || ctx == nil {
			s.refreshing = false
			s.mu.Unlock()
			return
		}
		s.pendingLists = 0
		s.mu.Unlock()
		s.refresh(ctx, c, which)
	}
}

// refresh fetches the lists in which again from c and takes them, if c is
// still the server's connection; the other lists stay as they are.
func (s *Server) refresh(parent context.Context, c *conn, which listSet) {
	s.refreshes.Add(1)
	ctx, cancel := context.WithTimeout(parent, 4*s.settings.ListTimeout)
	defer cancel()
	lists, err := s.fetchLists(ctx, c, which)
	if err != nil {
		if parent.Err() == nil { // else the server is closing: nothing to warn of
			s.logger.Warn("refresh lists after list_changed", "err", err)
		}
		return
	}
	var pins pinVerdict
	if which.has(0) { // the tools: check them against the pins
		pins = s.lockWithPins(lists.Tools)
	} else {
		s.mu.Lock()
		pins = s.pinned
	}
	if s.conn != c {
		s.mu.Unlock()
		return
	}
	for i, k := range listKinds {
		if !which.has(i) {
			*k.dst(&lists) = *k.dst(&s.raw)
		}
	}
	s.setListsLocked(lists, pins)
	s.mu.Unlock()
	if which.has(0) {
		s.logPins(pins)
	}
	s.logger.Info("upstream lists changed", "tools", len(lists.Tools), "prompts", len(lists.Prompts), "resources", len(lists.Resources))
	s.changed()
	if which.has(0) {
		s.saveLast()
	}
}

// pinVerdict is what the pins say of a server's tools.
type pinVerdict struct {
	changed []string // tools whose definition differs from their pin
	err     error    // Check's; wraps ErrPinFile when the file cannot be used
	epoch   uint64   // s.pinEpoch when the pins were read
}

// checkPins checks tools against the pins. It reads, and may write, the
// server's pin file: s.mu is never held across it.
func (s *Server) checkPins(tools []Item) pinVerdict {
	if s.mgr.pins == nil || len(tools) == 0 {
		return pinVerdict{}
	}
	changed, err := s.mgr.pins.Check(s.Config.ID(), tools)
	return pinVerdict{changed: changed, err: err}
}

// lockWithPins checks tools against the pins with s.mu not held (a call
// or a list never waits for the disk), and returns the verdict with s.mu
// held. A RecheckPins that began meanwhile (a `pin accept` may have
// changed the file after it was read) makes it check again: a verdict read
// before an accept is never taken after it.
func (s *Server) lockWithPins(tools []Item) pinVerdict {
	for {
		s.mu.Lock()
		epoch := s.pinEpoch
		s.mu.Unlock()
		v := s.checkPins(tools)
		v.epoch = epoch
		s.mu.Lock()
		if s.pinEpoch == epoch {
			return v
		}
		s.mu.Unlock()
	}
}

// setListsLocked takes raw as the server's lists, withholding the tools
// pins says changed since they were pinned. s.mu is held.
func (s *Server) setListsLocked(raw Lists, pins pinVerdict) {
	s.raw, s.lists, s.pinned = raw, raw, pins
	s.rawGen++
	s.status.PinChanged = pins.changed
	switch {
	case errors.Is(pins.err, ErrPinFile):
		// Fail closed whatever pin_on_change says: without the pins no
		// tool can be told unchanged.
		s.lists.Tools = nil
	case len(pins.changed) == 0, s.onChange == config.PinWarn && !errors.Is(pins.err, ErrPinsNotSaved):
		// Tools first seen whose pins could not be saved are withheld
		// whatever pin_on_change says, as docs/policy.md promises.
	default:
		kept := make([]Item, 0, len(raw.Tools))
		for _, t := range raw.Tools {
			if !slices.Contains(pins.changed, t.Key) {
				kept = append(kept, t)
			}
		}
		s.lists.Tools = kept
	}
}

// logPins says what the pins' verdict withholds, once s.mu is released.
func (s *Server) logPins(pins pinVerdict) {
	switch {
	case errors.Is(pins.err, ErrPinFile):
		s.logger.Error("tool pins cannot be read; every tool of this server withheld", "err", pins.err)
		return
	case errors.Is(pins.err, ErrPinsNotSaved):
		s.logger.Error("tool pins not saved; the tools seen for the first time, and any changed, withheld until they are", "err", pins.err, "tools", pins.changed)
		return
	case pins.err != nil:
		s.logger.Error("tool pins could not be checked or saved", "err", pins.err)
	}
	switch {
	case len(pins.changed) == 0:
	case s.onChange == config.PinWarn:
		s.logger.Warn("tool definitions changed since first seen; serving them (pin_on_change: warn)", "tools", pins.changed)
	default:
		s.logger.Error("tool definitions changed since first seen; withheld until accepted",
			"tools", pins.changed, "accept", s.Config.CLI.Command("pin", "accept", s.Config.ID()))
	}
}

// applyLogLevel sends logging/setLevel when the server logs.
func (s *Server) applyLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	for _, c := range s.connsLocked() {
		s.setLogLevel(s.ctx, c, level)
	}
}

// setLogLevel asks c, if it logs, for level, in the background. s.mu is
// held, so that closing cannot begin meanwhile.
func (s *Server) setLogLevel(ctx context.Context, c *conn, level mcp.LoggingLevel) {
	if c.init.Capabilities.Logging == nil || ctx == nil {
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, s.settings.ListTimeout)
		defer cancel()
		if _, err := c.request(ctx, "logging/setLevel", map[string]any{"level": level}); err != nil {
			s.logger.Debug("logging/setLevel", "err", err)
		}
	})
}

// notice is a notification on its way to the server.
type notice struct {
	method string
	params map[string]any
}

// noticeBuffer is how many notifications may wait for a server; the client
// sends few (roots/list_changed), and each says all there is to say.
const noticeBuffer = 16

// notify queues a notification for the server and returns at once: the
// hub's reader of a client must never wait for an upstream. When the
// queue is full, the notification is dropped.
func (s *Server) notify(method string, params map[string]any) {
	select {
	case s.notices <- notice{method, params}:
	default:
		s.logger.Debug("notification to upstream dropped: too many waiting", "method", method)
	}
}

// sendNotices sends the queued notifications to the server while it is
// connected (those queued while it is not are dropped), until ctx ends.
func (s *Server) sendNotices(ctx context.Context) {
	for {
		var n notice
		select {
		case <-ctx.Done():
			return
		case n = <-s.notices:
		}
		s.mu.Lock()
		conns := s.connsLocked()
		s.mu.Unlock()
		for _, c := range conns {
			if err := c.notify(n.method, n.params); err != nil {
				s.logger.Debug("notify upstream", "method", n.method, "err", err)
			}
		}
	}
}

// Capabilities are what the server declared in its handshake; zero while
// it is not ready.
func (s *Server) Capabilities() mcp.ServerCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return mcp.ServerCapabilities{}
	}
	return s.conn.init.Capabilities
}

// RecheckPins applies the pins again to the lists the server last sent,
// after `pin accept` changed them. The pin file is read with s.mu
// released; it reads it again when the lists changed meanwhile, unless
// they were checked after this began.
func (s *Server) RecheckPins() {
	s.mu.Lock()
	s.pinEpoch++ // checks under way read the pins again (see lockWithPins)
	epoch := s.pinEpoch
	for {
		if s.pinEpoch != epoch || s.pinned.epoch == epoch || s.status.State != StateReady {
			// A later RecheckPins does it, or the lists were checked after
			// this began, or there are none to check.
			s.mu.Unlock()
			return
		}
		gen, raw := s.rawGen, s.raw
		s.mu.Unlock()
		pins := s.checkPins(raw.Tools)
		pins.epoch = epoch
		s.mu.Lock()
		if s.pinEpoch == epoch && s.rawGen == gen && s.status.State == StateReady {
			before := len(s.lists.Tools)
			s.setListsLocked(raw, pins)
			after := len(s.lists.Tools)
			s.mu.Unlock()
			s.logPins(pins)
			if before != after {
				s.changed()
			}
			return
		}
	}
}

// Request sends a raw request to the server for owner, bounded by timeout,
// and returns the raw result. Errors name the server. owner is the client
// session the request is made for (nil: no one's, it goes on the shared
// connection): it picks the connection of isolation: per-session and
// auth: per-user, and a request the server sends back while it runs is
// told apart from one during another owner's request (see callContext).
func (s *Server) Request(ctx context.Context, owner Owner, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	res, _, err := s.RequestOn(ctx, owner, 0, 0, method, params, timeout)
	return res, err
}

// RequestOn is Request sent only on the connection on (zero: whichever
// Request would use): when the connection it would use is another (the
// one on named ended, the server restarted since), it fails with
// ErrConnGone and sends nothing. conn is the connection it sent on (what
// the server numbers per connection, its task ids, is told apart by it),
// zero when it sent on none. part is the hub's number for the work of
// owner's the request is one part of (a 2026-07-28 call held between
// rounds), zero for none: what the server sends during it comes back
// with it (Event.Part).
func (s *Server) RequestOn(ctx context.Context, owner Owner, on ConnID, part uint64, method string, params any, timeout time.Duration) (_ json.RawMessage, conn ConnID, _ error) {
	b := callBound{parent: ctx, deadline: time.Now().Add(timeout)}
	defer b.end()
	c, st := s.awaitSession(&b)
	if c == nil {
		return nil, 0, s.unavailable(st)
	}
	var key Owner
	isolated := false
	if !s.shared {
		key, isolated = s.perSession(owner)
		if err := s.userSignedIn(key); err != nil {
			return nil, 0, err
		}
	}
	var tc trackedCall
	if isolated {
		var (
			err  error
			done func()
		)
		// Tracked from before the connection is ready: a user's own
		// connection, dialled for this request, may be asked about
		// during its start, and the user's other sessions must not make
		// that ambiguous (see callContext).
		c, done, err = s.isolatedConn(b.context(), key, func(id ConnID) { tc = s.trackCallOn(&b, id, owner, part) })
		if tc.seq != 0 {
			defer s.untrackCall(tc)
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("upstream %s: no connection for this client session within %s", s.Config.ID(), timeout)
			}
			return nil, 0, err
		}
		defer done()
	}
	if on != 0 && c.id != on {
		return nil, 0, fmt.Errorf("upstream %s: %w", s.Config.ID(), ErrConnGone)
	}
	if tc.seq == 0 {
		tc = s.trackCall(&b, c, owner, part)
		defer s.untrackCall(tc)
	}
	defer s.awaitRouted(&b, s.events.mark())
	defer func() {
		if conn = 0; c != nil {
			conn = c.id
		}
	}()
	res, err := c.requestFor(&b, tc, method, params)
	if c.auth != nil && err != nil && unauthorized(err) {
		// The token was refused: renew it once (unless a call refused
		// the same token has renewed it already) and try again.
		if rerr := c.auth.Renew(b.context(), refusedAuthorization(err)); rerr == nil {
			res, err = c.requestFor(&b, tc, method, params)
		} else {
			err = signInError{fmt.Errorf("the server refused the token and it could not be renewed (%v): run: %s", rerr, s.Config.CLI.Command("auth", "login", s.Config.ID()))}
		}
		err = userAuthError(key, s, err)
	}
	if c.auth != nil && err != nil && insufficientScope(err) && c.auth.Newer(refusedAuthorization(err)) {
		res, err = c.requestFor(&b, tc, method, params) // signed in again since, at the wider scope
	}
	if c.auth != nil && err != nil && insufficientScope(err) {
		err = signInError{&ScopeError{Challenge: challenge(err), err: fmt.Errorf("the server refused the token for %s (403 insufficient_scope): %s; sign in again with: %s", method, c.stepUp(b.context(), challenge(err)), s.Config.CLI.Command("auth", "login", s.Config.ID()))}}
		err = userAuthError(key, s, err) // a user's own: a sign-in link, which asks for the scopes kept
	}
	if c.remote() && !isolated && errors.Is(err, transport.ErrSessionExpired) && on == 0 {
		// The server ended the session (HTTP 404): initialize again, once,
		// and retry on the new session.
		c.lose(errors.New("the server ended the session (HTTP 404)"), true)
		if c = s.awaitReconnect(b.context(), c); c != nil {
			res, err = c.requestFor(&b, tc, method, params)
		}
	}
	switch {
	case err == nil, isRPCError(err):
		return res, 0, err
	case errors.Is(err, context.DeadlineExceeded):
		return nil, 0, fmt.Errorf("upstream %s: no answer to %s within %s", s.Config.ID(), method, timeout)
	case errors.Is(err, context.Canceled):
		return nil, 0, err
	default:
		if c != nil && c.remote() && sessionLost(err) {
			// A remote server not reached, or refusing the session, is
			// reconnected; a failure of this call alone leaves the
			// session to the others.
			c.lose(err, false)
			return nil, 0, fmt.Errorf("upstream %s: %w", s.Config.ID(), err)
		}
		return nil, 0, fmt.Errorf("upstream %s %w", s.Config.ID(), err) // "upstream f exited (status 1): ..."
	}
}

// callBound bounds a request: its caller's context and the deadline of
// its timeout (zero: none). The connection's calls table keeps the
// deadline (jsonrpc.Conn.CallSentBy); the context.WithDeadline that
// stood for both is made (context) only where a wait needs a context: a
// reconnect, an isolated connection, a token's renewal, a request or
// notification of the server's during the call (see callContext). It was
// the largest part of what a call cost the hub above net/http's own: a
// context, its timer, its place among its parent's children, its Done
// channel.
type callBound struct {
	parent   context.Context
	deadline time.Time
	ctx      context.Context
	cancel   context.CancelFunc
}

// context is the bound as a context, made on first use and ended by end.
func (b *callBound) context() context.Context {
	switch {
	case b.ctx != nil:
	case b.deadline.IsZero():
		b.ctx = b.parent
	default:
		b.ctx, b.cancel = context.WithDeadline(b.parent, b.deadline)
	}
	return b.ctx
}

// end ends the context made, if any.
func (b *callBound) end() {
	if b.cancel != nil {
		b.cancel()
	}
}

// expired reports whether the bound has ended at now: its caller's
// context, or its deadline.
func (b *callBound) expired(now time.Time) bool {
	return b.parent.Err() != nil || !b.deadline.IsZero() && !now.Before(b.deadline)
}

// isRPCError reports whether err is the server's JSON-RPC error
// (errors.AsType: errors.As's target escaped, an allocation every
// request made, answered or not).
func isRPCError(err error) bool {
	_, ok := errors.AsType[*RPCError](err)
	return ok
}

// awaitRouted waits until the hub has routed what the server sent from
// mark on, if it sent anything: what a server sends during a call
// (progress, log messages, requests) must reach the client before the
// call's result, as it left the server. A call during which the server
// sent nothing, most calls, returns at once; one during which it did
// waits for those events (and any still unrouted before them) only, never
// for a round trip through the hub's loop (see eventLog).
func (s *Server) awaitRouted(b *callBound, mark uint64) {
	if end := s.events.mark(); end != mark {
		s.events.wait(b.context(), end, s.mgr.routeWait)
	}
}

// awaitReconnect waits, within ctx, for a connection other than old.
func (s *Server) awaitReconnect(ctx context.Context, old *conn) *conn {
	c, _ := s.awaitConn(ctx, old, func(Status) bool { return true })
	return c
}

// awaitSession is the server's connection, waited for within ctx and
// reconnectWait while the server is reconnecting; nil, with the status
// that says why, when there is none.
func (s *Server) awaitSession(b *callBound) (*conn, Status) {
	s.mu.Lock()
	c, st := s.conn, s.status
	s.mu.Unlock()
	if c != nil || !st.Reconnecting {
		return c, st
	}
	ctx, cancel := context.WithTimeout(b.context(), time.Duration(s.reconnectWait.Load()))
	defer cancel()
	return s.awaitConn(ctx, nil, func(st Status) bool { return st.Reconnecting })
}

// awaitConn waits, within ctx, for a connection other than old, while
// the status is one worth waiting in (while); nil when none came.
func (s *Server) awaitConn(ctx context.Context, old *conn, while func(Status) bool) (*conn, Status) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		c, st := s.conn, s.status
		s.mu.Unlock()
		switch {
		case c != nil && c != old:
			return c, st
		case !while(st):
			return nil, st
		}
		select {
		case <-ctx.Done():
			return nil, st
		case <-t.C:
		}
	}
}

// trackedCall is a request in flight: its number among the server's
// (Server.calls; zero for none), the bound it is made in (its caller's
// context and deadline; see callBound), the owner it is for, the part of
// the owner's work it is (RequestOn's part) and the connection it went
// on. made is the bound made a context (see callContext), kept in
// Server.calls only.
type trackedCall struct {
	seq      uint64
	ctx      context.Context
	deadline time.Time
	owner    Owner
	part     uint64
	conn     ConnID
	made     *callBound
}

// trackCall records a request in flight on c for owner, bounded by b, so
// that a request or notification the server sends back while it runs can
// be tied to it (see callContext): the request is made for the call it
// returns (conn.requestFor), which says so explicitly where the transport
// can tell; untrackCall forgets it (a method, not a returned closure: the
// closure was an allocation every request made).
func (s *Server) trackCall(b *callBound, c *conn, owner Owner, part uint64) trackedCall {
	return s.trackCallOn(b, c.id, owner, part)
}

// trackCallOn is trackCall on the connection id names, which may be
// still dialling (see isolatedConn).
func (s *Server) trackCallOn(b *callBound, id ConnID, owner Owner, part uint64) trackedCall {
	s.callMu.Lock()
	s.callSeq++
	seq := s.callSeq
	if s.calls == nil {
		s.calls = map[uint64]trackedCall{}
	}
	tc := trackedCall{seq: seq, ctx: b.parent, deadline: b.deadline, owner: owner, part: part, conn: id}
	s.calls[seq] = tc
	s.callMu.Unlock()
	return tc
}

// untrackCall forgets a request trackCall recorded, and ends the context
// callContext made of it, if any.
func (s *Server) untrackCall(tc trackedCall) {
	s.callMu.Lock()
	tc = s.calls[tc.seq]
	delete(s.calls, tc.seq)
	s.callMu.Unlock()
	if tc.made != nil {
		tc.made.end()
	}
}

// callContextLocked is the context of the call seq in flight: its bound
// made a context once, and kept until the call ends (untrackCall).
func (s *Server) callContextLocked(seq uint64) context.Context {
	tc := s.calls[seq]
	if tc.made == nil {
		tc.made = &callBound{parent: tc.ctx, deadline: tc.deadline}
		s.calls[seq] = tc
	}
	return tc.made.context()
}

// ended is the context of a call that has ended: its bound's, ended.
func (tc trackedCall) ended() context.Context {
	ctx, cancel := context.WithCancel(tc.ctx)
	cancel()
	return ctx
}

// callContext is the context a request or notification from the server
// is handled in, the owner it is for and the part of the owner's work it
// came during (see RequestOn). Where the transport tied it to one of our
// requests (related, a Streamable HTTP response stream) that is the
// request's context, its owner and part. Otherwise (stdio, a GET stream) the
// server does not say which of our requests it belongs to: when every
// request in flight on its connection (ConnOf(ctx), where ctx says) is for
// one owner it is that owner's most recent one; when requests of several
// owners are in flight it is ctx, of no owner and ambiguous, so that it
// goes to no one rather than to a guess. A connection of one owner's own
// (isolation: per-session) names that owner as only: only its calls
// count, and what it receives is that owner's. The result keeps ctx's
// connection. A request's context is its caller's bounded by its
// timeout, and ends when it does.
func (s *Server) callContext(ctx context.Context, related trackedCall, only Owner) (_ context.Context, owner Owner, part uint64, ambiguous bool) {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	if related.seq != 0 {
		if _, ok := s.calls[related.seq]; ok {
			return s.callContextLocked(related.seq), related.owner, related.part, false
		}
		return related.ended(), only, related.part, false // the call has ended since
	}
	onConn := ConnOf(ctx)
	var latest uint64
	owners := map[Owner]bool{}
	now := time.Now()
	for seq, c := range s.calls {
		if c.expired(now) || only != nil && c.owner != only || onConn != 0 && c.conn != onConn {
			continue
		}
		if c.owner != nil {
			owners[c.owner] = true
		}
		if seq > latest {
			latest = seq
		}
	}
	switch {
	case len(owners) > 1:
		return ctx, nil, 0, true
	case latest == 0:
		return ctx, only, 0, false
	}
	c := s.calls[latest]
	if onConn != 0 {
		return withConn(s.callContextLocked(latest), onConn), c.owner, c.part, false
	}
	return s.callContextLocked(latest), c.owner, c.part, false
}

// expired reports whether the call has ended at now, or its bound has.
func (tc trackedCall) expired(now time.Time) bool {
	if tc.made != nil && tc.made.ctx != nil {
		return tc.made.ctx.Err() != nil
	}
	return (&callBound{parent: tc.ctx, deadline: tc.deadline}).expired(now)
}

func (s *Server) unavailable(st Status) error {
	if st.Reconnecting {
		return fmt.Errorf("upstream %s is unavailable: reconnecting (its session ended: %v): %w", s.Config.ID(), st.Err, errUnavailable)
	}
	switch st.State {
	case StateStarting:
		return fmt.Errorf("upstream %s is still starting: %w", s.Config.ID(), errUnavailable)
	case StateFailed:
		return fmt.Errorf("upstream %s is unavailable: %v: %w", s.Config.ID(), st.Err, errUnavailable)
	default:
		return fmt.Errorf("upstream %s is %s: %w", s.Config.ID(), st.State, errUnavailable)
	}
}

// close stops the server and waits for everything it started.
func (s *Server) close() {
	s.mu.Lock()
	s.closing = true
	if s.cancel != nil {
		s.cancel()
	}
	c := s.conn
	s.conn = nil
	if s.status.State != StateDisabled {
		s.status = Status{State: StateStopped}
	}
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
	s.wg.Wait()
}
