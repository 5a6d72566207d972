package server

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// client is whom the hub serves a request for: a session (session.go),
// or the caller of one request over HTTP that came without one
// (oneRequest: 2026-07-28 needs none). Both are what the session table,
// the tasks table and the call stages keep and find (routes.Session,
// tasks.Session, call.Owner), and what the request path reads of its
// client (clientState's methods).
type client interface {
	routes.Session
	call.Owner
	Gone() <-chan struct{}
	// Initialize, Initialized and the setters are what the handshake and
	// discovery write (clients.Session).
	clients.Session

	GetClientInfo() mcp.Implementation
	ProtocolVersion() string
	stated(st era.Statement)
	shownIn(cfg *config.Config) *shown
	shownAs(cfg *config.Config, info mcp.Implementation) *shown
	profileIn(cfg *config.Config) string
	profileName(cfg *config.Config) string
	info(cfg *config.Config) routes.SessionInfo
	identity() *identity.Identity
	transportName() string
	// saw and setModern keep what the client was answered of its lists
	// and its era, for its listens; sessionless reports whether it ends
	// with its request (see session.sessionless).
	saw(k listen.Kind, hash uint64)
	setModern()
	sessionless() bool
	// handshakeWaits and firstListWait bound the waits of its handshake
	// and its first list for the upstreams starting (firstlist.go).
	handshakeWaits(by time.Time)
	firstListWait(cfg *config.Config) time.Duration
}

// clientState is what a request reads of its client, session or not:
// who it is and what it stated (initialize, or a 2026-07-28 request's
// _meta), the view it is shown, and how to reach it.
type clientState struct {
	id           string
	transport    string             // stdio, streamable-http or sse
	profile      string             // the profile the client sees, "" for the whole config (see SessionOptions.Profile)
	who          *identity.Identity // the caller, where the face knows it (see SessionOptions.Who); nil else
	peer         Peer
	routingState routes.Entry // what the hub's session table keeps in the client

	// linker makes the face's sign-in links for the client's caller
	// (SessionOptions.SignIn); nil: the face has none.
	linker SignInLinker

	// shown is what the client is shown under the config it was last
	// asked about, for its client as it named itself then (see shownIn).
	shown atomic.Pointer[shown]
	// startupBy is when the wait of its handshake for the upstreams
	// starting ended, or was to end (UnixNano; 0: it did not wait): its
	// flat lists wait no longer (see firstListWait).
	startupBy atomic.Int64

	mu              sync.Mutex // guards the fields below
	clientInfo      mcp.Implementation
	capabilities    mcp.ClientCapabilities
	capsKnown       bool   // the client stated capabilities (initialize or a request's _meta)
	capsStated      []byte // the _meta capabilities they were decoded from, when small (see stated)
	protocolVersion string
	logLevel        mcp.LoggingLevel
}

// identity is the client's caller, nil where the face knows none.
func (s *clientState) identity() *identity.Identity { return s.who }

// transportName is how the client came: stdio, streamable-http or sse.
func (s *clientState) transportName() string { return s.transport }

// Notify sends the client a notification encoded whole.
func (s *clientState) Notify(ctx context.Context, msg []byte) { s.peer.Notify(ctx, msg) }

// Listening tells the client's face that the hub has taken the listen
// whose request ctx is (see Peer).
func (s *clientState) Listening(ctx context.Context) { s.peer.Listening(ctx) }

// oneRequest is the client of one request over HTTP that came without
// Mcp-Session-Id (Hub.Answer): what the request itself carries (its
// caller, its profile, what its _meta states) and its Peer, the
// request's own response. None of a session's long-lived parts (its
// listens, its gone channel, a context of its own) is made for it, and
// the session table keeps it unlisted while the request runs
// (routes.Table.AddUnlisted), for what comes back during its call.
type oneRequest struct {
	clientState
	ended atomic.Bool
}

// closed is Gone of a oneRequest that ended: a channel closed once, for
// all of them.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Gone is closed once the request ended (End); nil, which never
// receives, before.
func (o *oneRequest) Gone() <-chan struct{} {
	if o.ended.Load() {
		return closed
	}
	return nil
}

// End marks the request ended: its call's answer adopts no task (see
// tasks.Table.Adopt).
func (o *oneRequest) End() { o.ended.Store(true) }

// Modern is true: the request is of 2026-07-28 (server.Stateless), and
// hears of nothing unasked. Updated tells it nothing: it has no listens.
func (o *oneRequest) Modern() bool                    { return true }
func (o *oneRequest) Updated(string, json.RawMessage) {}

// Initialize records nothing (server/discover calls it): a request with
// no session stays one (sessionless), and Initialized is false.
func (o *oneRequest) Initialize()       {}
func (o *oneRequest) Initialized() bool { return false }
func (o *oneRequest) sessionless() bool { return true }

// saw and setModern keep nothing: no listen of the request's hears of
// its lists.
func (o *oneRequest) saw(listen.Kind, uint64) {}
func (o *oneRequest) setModern()              {}

// caller is who a state is bound to: the client's session, or, for a
// request over HTTP that came without one (2026-07-28 needs none), the
// caller the face knows it came from: its identity (the JWT's user, the
// static token's name; see SessionOptions.Who), else the credential it
// came with (where the face tells credentials apart: named tokens; else
// any holder of the hub's token). The identity first, as the credential
// is "" for every caller where the face gives clients no shares
// (http.client_share: 100%), and signed-in users would be one caller.
// The state names a call held for one round only, so it cannot be used
// twice either way.
func caller(c client) string {
	if c.sessionless() {
		if key := c.identity().Key(); key != "" {
			return "identity " + key
		}
		return "credential " + c.Client()
	}
	return "session " + c.ID()
}

// UserKey is the session's caller's key among all callers (see
// identity.Identity.Key), "" when the face knows no caller or checked no
// token: a server's auth: per-user then behaves as shared (stdio is one
// user). It makes the session an upstream.Owner.
func (s *clientState) UserKey() string {
	if s.who == nil || s.who.Kind == identity.KindNone || s.who.Subject == "" {
		return ""
	}
	return s.who.Key()
}

// Linker sends the session's caller to sign in (SessionOptions.SignIn),
// nil when its face cannot: the session is a call.Owner.
func (s *clientState) Linker() SignInLinker { return s.linker }

// ID names the session, as Open was given it.
func (s *clientState) ID() string { return s.id }

// SessionID is the session's id: the owner (upstream.Owner) of its
// calls is the session itself.
func (s *clientState) SessionID() string { return s.id }

// Dropped is how many notifications the client had no room for.
func (s *clientState) Dropped() uint64 { return s.peer.Dropped() }

// Routing is what the hub's session table keeps in the session.
func (s *clientState) Routing() *routes.Entry { return &s.routingState }

// Request sends the client a request and waits for its answer within ctx.
// A client's error answer comes back as *rpcError.
func (s *clientState) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := jsonrpc.Params(params)
	if err != nil {
		return nil, err
	}
	return s.peer.Call(ctx, method, p)
}

// Client is the client the session belongs to where its face tells
// clients apart (Peer.Client: an HTTP session of one of several
// credentials), else "": as an upstream.Owner, so that its client's share
// of per-session connections counts it. A session of no face yet (a
// test's) is no client's.
func (s *clientState) Client() string {
	if s.peer == nil {
		return ""
	}
	return s.peer.Client()
}

// SetClientInfo keeps info, bounded (see clients.BoundImplementation).
func (s *clientState) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clientInfo = clients.BoundImplementation(info)
}

func (s *clientState) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientInfo
}

// SetClientCapabilities keeps c, bounded (see clients.BoundCapabilities).
func (s *clientState) SetClientCapabilities(c mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capabilities = clients.BoundCapabilities(c)
	s.capsKnown, s.capsStated = true, nil
}

// stated makes what st says the session's: its capabilities, its client
// info when given, and its protocol version. Capabilities that do not
// decode count as none. Only a statement the hub serves is made the
// session's (era.Statement.Served, decided once when the request was
// read): another's request is refused (era.Statement.Check), and its
// version, any string that sorts after 2026-07-28, would be kept whole.
func (s *clientState) stated(st era.Statement) {
	if !st.Served() {
		return
	}
	info := st.Info()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocolVersion = st.Version
	if info != nil {
		s.clientInfo = *info
	}
	if s.capsKnown && st.Same(s.capsStated) {
		return // as the last request stated them: decoded already
	}
	s.capabilities, s.capsStated = st.Caps()
	s.capsKnown = true
}

// ClientCapabilities are the capabilities the client stated last, and
// whether it stated any yet (see upstream.Owner): a per-session
// upstream connection declares them.
func (s *clientState) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capabilities, s.capsKnown
}

func (s *clientState) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capabilities
}

// SetProtocolVersion records the version initialize negotiated.
func (s *clientState) SetProtocolVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocolVersion = v
}

// ProtocolVersion is the version initialize negotiated or the latest
// 2026-07-28 request stated, "" before either.
func (s *clientState) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion
}

func (s *clientState) SetLogLevel(l mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLevel = l
}

func (s *clientState) GetLogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

// shown is what a session is shown under one config, for one client (its
// name and version): worked out once per config snapshot and client, not
// per request (shownIn).
type shown struct {
	cfg           *config.Config
	name, version string
	profile       string // profileName
	viewKey       string // profileIn
	maxResult     int    // the cap on its tool results (max_result), 0 for none
	renames       bool   // a clients: rule renames the tools it is shown (clients.Renames)
}

// shownIn is what the session is shown under cfg: the last one worked out
// while the config and the client's name and version are the same, else
// worked out again.
func (s *clientState) shownIn(cfg *config.Config) *shown {
	info := s.GetClientInfo()
	if p := s.shown.Load(); p != nil && p.cfg == cfg && p.name == info.Name && p.version == info.Version {
		return p
	}
	p := s.shownAs(cfg, info)
	s.shown.Store(p)
	return p
}

// shownAs is what the session would be shown under cfg were its client
// info: its handshake asks it of the clientInfo it states, before the
// session keeps it.
func (s *clientState) shownAs(cfg *config.Config, info mcp.Implementation) *shown {
	p := &shown{cfg: cfg, name: info.Name, version: info.Version, profile: s.profile}
	// A client's name picks its view only where the connection is the
	// client's alone: over HTTP the URL does (see profileName).
	if s.profile == "" && s.transport == "stdio" && len(cfg.Clients) > 0 {
		p.profile = cfg.ProfileForClient(info.Name)
	}
	p.viewKey = p.profile
	if clients.ModesVary(cfg) {
		p.viewKey = clients.ViewKey(cfg, p.profile, info)
	}
	p.maxResult = cfg.MaxResultFor(info.Name, p.profile)
	p.renames = clients.Renames(cfg, info.Name)
	return p
}

// profileIn is the key of the view the session sees under cfg (viewOf's
// argument): its profile (see profileName), or, where mode: auto or a
// clients: rule shows its client another mode than the profile's own,
// the profile's view in that mode (see clients.ViewKey). What needs the
// profile itself (rate limits, max_result) asks profileName.
func (s *clientState) profileIn(cfg *config.Config) string { return s.shownIn(cfg).viewKey }

// profileName is the profile the session sees under cfg: the one it was
// opened in (serve --profile, /mcp/p/NAME), else on stdio the one a
// clients: rule gives its client's name, else "" (the whole config). A
// client's name picks its view only where the connection is the client's
// alone: over HTTP the URL does (see config.ClientRule.Profile).
func (s *clientState) profileName(cfg *config.Config) string { return s.shownIn(cfg).profile }

// modeIn is the mode the session is shown under cfg, and why.
func (s *clientState) modeIn(cfg *config.Config) (config.Mode, string) {
	profile := s.profileName(cfg)
	m, why := clients.ModeFor(cfg, profile, s.GetClientInfo())
	if m == config.ModeAuto { // cannot happen: ModeFor resolves auto
		m = config.ModeDynamic
	}
	return m, why
}

// info is what the hub knows of the session, in cfg (see
// routes.SessionInfo).
func (s *clientState) info(cfg *config.Config) routes.SessionInfo {
	s.mu.Lock()
	info := routes.SessionInfo{ID: s.id, Transport: s.transport, ClientName: s.clientInfo.Name, ClientVersion: s.clientInfo.Version,
		ProtocolVersion: s.protocolVersion, Capabilities: s.capabilities, User: s.who.User(), Subject: s.who.Key(), Profile: s.profile}
	s.mu.Unlock()
	info.Inflight, info.Dropped = s.peer.Answering(), s.peer.Dropped()
	m, why := s.modeIn(cfg)
	info.Mode, info.ModeWhy = string(m), why
	return info
}
