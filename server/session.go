package server

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// session is one downstream client: what initialize negotiated
// (clients.Protocol) and how to reach it.
// Its state is small and plain, so that one day it can be shared.
type session struct {
	id           string
	transport    string             // stdio, streamable-http or sse
	profile      string             // the profile the session sees, "" for the whole config (see SessionOptions.Profile)
	who          *identity.Identity // the caller, where the face knows it (see SessionOptions.Who); nil else
	peer         Peer
	initialized  atomic.Bool   // initialize answered, the session resumed, or see clients.Protocol
	routingState routes.Entry  // what the hub's session table keeps in the session
	lists        *listen.State // what it was told of its lists, its listens
	gone         chan struct{} // closed when the session ends (see end)
	endOnce      sync.Once

	// linker makes the face's sign-in links for the session's caller
	// (SessionOptions.SignIn); nil: the face has none.
	linker SignInLinker

	// shown is what the session is shown under the config it was last
	// asked about, for its client as it named itself then (see shownIn).
	shown atomic.Pointer[shown]

	mu              sync.Mutex // guards the fields below
	clientInfo      mcp.Implementation
	capabilities    mcp.ClientCapabilities
	capsKnown       bool   // the client stated capabilities (initialize or a request's _meta)
	capsStated      []byte // the _meta capabilities they were decoded from, when small (see stated)
	protocolVersion string
	logLevel        mcp.LoggingLevel
}

func newSession(id, transport string) *session {
	return &session{
		id:        id,
		transport: transport,
		logLevel:  mcp.LoggingLevelInfo,
		gone:      make(chan struct{}),
		lists:     listen.NewState(),
	}
}

// UserKey is the session's caller's key among all callers (see
// identity.Identity.Key), "" when the face knows no caller or checked no
// token: a server's auth: per-user then behaves as shared (stdio is one
// user). It makes the session an upstream.Owner.
func (s *session) UserKey() string {
	if s.who == nil || s.who.Kind == identity.KindNone || s.who.Subject == "" {
		return ""
	}
	return s.who.Key()
}

// Linker sends the session's caller to sign in (SessionOptions.SignIn),
// nil when its face cannot: the session is a call.Owner.
func (s *session) Linker() SignInLinker { return s.linker }

// Initialize marks the session initialized: it may set its log level,
// and over HTTP it is no request's alone (see sessionless).
func (s *session) Initialize() { s.initialized.Store(true) }

// Initialized reports whether the session has been initialized.
func (s *session) Initialized() bool { return s.initialized.Load() }

// ID names the session, as Open was given it.
func (s *session) ID() string { return s.id }

// SessionID is the session's id: the owner (upstream.Owner) of its
// calls is the session itself.
func (s *session) SessionID() string { return s.id }

// Dropped is how many notifications the client had no room for.
func (s *session) Dropped() uint64 { return s.peer.Dropped() }

// Routing is what the hub's session table keeps in the session.
func (s *session) Routing() *routes.Entry { return &s.routingState }

// Modern reports whether the client has sent a request of 2026-07-28 or
// later (see listen.State.Modern).
func (s *session) Modern() bool { return s.lists.Modern() }

// Updated tells the session's open listens that uri changed.
func (s *session) Updated(uri string, params json.RawMessage) { s.lists.Updated(uri, params) }

// End marks the session ended, which stops what the hub does for it (a
// pending list_changed).
func (s *session) End() { s.endOnce.Do(func() { close(s.gone) }) }

// Lists, Notify and Gone (and ID) are the session as its listens see it
// (listen.Session); Notify sends a notification encoded whole.
func (s *session) Lists() *listen.State                   { return s.lists }
func (s *session) Notify(ctx context.Context, msg []byte) { s.peer.Notify(ctx, msg) }
func (s *session) Gone() <-chan struct{}                  { return s.gone }

// Request sends the client a request and waits for its answer within ctx.
// A client's error answer comes back as *rpcError.
func (s *session) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
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
func (s *session) Client() string {
	if s.peer == nil {
		return ""
	}
	return s.peer.Client()
}

// SetClientInfo keeps info, bounded (see clients.BoundImplementation).
func (s *session) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clientInfo = clients.BoundImplementation(info)
}

func (s *session) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientInfo
}

// SetClientCapabilities keeps c, bounded (see clients.BoundCapabilities).
func (s *session) SetClientCapabilities(c mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capabilities = clients.BoundCapabilities(c)
	s.capsKnown, s.capsStated = true, nil
}

// stated makes what st says the session's: its capabilities (none when it
// states none), its client info when given, and its protocol version.
// Capabilities that do not decode count as none.
func (s *session) stated(st era.Statement) {
	if !st.Modern {
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
func (s *session) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capabilities, s.capsKnown
}

func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capabilities
}

// SetProtocolVersion records the version initialize negotiated.
func (s *session) SetProtocolVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocolVersion = v
}

// ProtocolVersion is the version initialize negotiated or the latest
// 2026-07-28 request stated, "" before either.
func (s *session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion
}

func (s *session) SetLogLevel(l mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLevel = l
}

func (s *session) GetLogLevel() mcp.LoggingLevel {
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
func (s *session) shownIn(cfg *config.Config) *shown {
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
func (s *session) shownAs(cfg *config.Config, info mcp.Implementation) *shown {
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
func (s *session) profileIn(cfg *config.Config) string { return s.shownIn(cfg).viewKey }

// profileName is the profile the session sees under cfg: the one it was
// opened in (serve --profile, /mcp/p/NAME), else on stdio the one a
// clients: rule gives its client's name, else "" (the whole config). A
// client's name picks its view only where the connection is the client's
// alone: over HTTP the URL does (see config.ClientRule.Profile).
func (s *session) profileName(cfg *config.Config) string { return s.shownIn(cfg).profile }

// modeIn is the mode the session is shown under cfg, and why.
func (s *session) modeIn(cfg *config.Config) (config.Mode, string) {
	profile := s.profileName(cfg)
	m, why := clients.ModeFor(cfg, profile, s.GetClientInfo())
	if m == config.ModeAuto { // cannot happen: ModeFor resolves auto
		m = config.ModeDynamic
	}
	return m, why
}

// caller is who a state is bound to: the client's session, or, for a
// request over HTTP that came without one (2026-07-28 needs none, and
// the face makes a session for that request alone), the caller the face
// knows it came from: its identity (the JWT's user, the static token's
// name; see SessionOptions.Who), else the credential it came with (where the face
// tells credentials apart: named tokens; else any holder of the hub's
// token). The identity first, as the credential is "" for every caller
// where the face gives clients no shares (http.client_share: 100%), and
// signed-in users would be one caller. The state names a call held for
// one round only, so it cannot be used twice either way.
func caller(sess *session) string {
	if sessionless(sess) {
		if key := sess.who.Key(); key != "" {
			return "identity " + key
		}
		return "credential " + sess.Client()
	}
	return "session " + sess.id
}

// sessionless reports whether sess is the session of one request over
// HTTP that came without Mcp-Session-Id: it ends with that request.
func sessionless(sess *session) bool {
	return sess.transport == "streamable-http" && !sess.Initialized()
}

// info is what the hub knows of the session, in cfg (see
// routes.SessionInfo).
func (s *session) info(cfg *config.Config) routes.SessionInfo {
	s.mu.Lock()
	info := routes.SessionInfo{ID: s.id, Transport: s.transport, ClientName: s.clientInfo.Name, ClientVersion: s.clientInfo.Version,
		ProtocolVersion: s.protocolVersion, Capabilities: s.capabilities, User: s.who.User(), Subject: s.who.Key(), Profile: s.profile}
	s.mu.Unlock()
	info.Inflight, info.Dropped = s.peer.Answering(), s.peer.Dropped()
	m, why := s.modeIn(cfg)
	info.Mode, info.ModeWhy = string(m), why
	return info
}

// resume sets the state of a session initialized elsewhere (see
// SessionOptions.State), as initialize would have left it: its client is
// not asked again. What state holds is bounded here as initialize bounds
// it (the identity was bounded where it was made).
func (s *session) resume(state SessionState) {
	s.mu.Lock()
	s.protocolVersion = clients.ClipText(state.ProtocolVersion)
	s.clientInfo = clients.BoundImplementation(state.ClientInfo)
	s.capabilities = clients.BoundCapabilities(state.Capabilities)
	s.capsKnown = state.CapsKnown
	if state.LogLevel != "" {
		s.logLevel = state.LogLevel
	}
	s.mu.Unlock()
	s.Initialize()
}
