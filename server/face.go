package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/inflight"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/panics"
	"github.com/dynamic-mcp/dynamic-mcp/server/peruser"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file is the hub's contract with its faces, the transports clients
// reach it by (stdio here, Streamable HTTP and legacy SSE in
// server/mcphttp): a face opens a Session for each client with the Peer
// that reaches the client, hands it the client's requests and
// notifications, and closes it when the client goes. A face knows nothing
// else of the hub. Session.Request, where a request's path through the
// hub begins, stands beside serve (request.go).

// Peer is how the hub reaches one client; each face implements it. No
// method may block on a slow client: a notification the client has no
// room for is dropped and counted, a request waits only for its answer,
// within ctx.
type Peer interface {
	// Notify sends a notification (encoded whole). ctx is the context of
	// the client's request it belongs to, or the session's: over HTTP it
	// picks the stream the notification goes down.
	Notify(ctx context.Context, msg []byte)
	// Call sends the client a request and waits for its answer, as Notify
	// picking the stream by ctx. The client's error answer comes back as
	// *jsonrpc.Error; a client that has left fails it with ErrClientGone.
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Listening tells the face that the hub has taken the client's
	// subscriptions/listen whose request ctx is: it will not be refused,
	// and what follows is its stream, the acknowledgement first, which
	// may wait for an upstream's start. A face that holds a listen's
	// response back until the hub takes or refuses it (HTTP: a refusal is
	// plain JSON, a listen an event stream) opens it now.
	Listening(ctx context.Context)
	// Dropped is how many notifications were dropped for the client.
	Dropped() uint64
	// Answering is how many of the client's requests are being answered.
	Answering() int
	// Client names the client the session belongs to where the face tells
	// clients apart (an HTTP session of one of several credentials), ""
	// where it does not: the session's share of per-session connections
	// is its client's (upstream.Owner's Client).
	Client() string
}

// Host is the hub as a face that serves many callers is given it
// (server/mcphttp); *Hub implements it. The face needs nothing else of the
// hub: what it asks beyond these, it is handed by whoever builds it.
type Host interface {
	// OpenSession opens a session as o says (see Hub.Open).
	OpenSession(o SessionOptions) (*Session, error)
	// Answer answers one request of a caller with no session (see
	// Hub.Answer).
	Answer(ctx context.Context, o SessionOptions, msg *jsonrpc.Message) (json.RawMessage, error)
	// Settings are the settings of the hub's current config (see
	// Hub.Settings).
	Settings() config.Settings
	// HasProfile reports whether the current config has the profile name.
	HasProfile(name string) bool
	// Inflight are the budgets of bytes in flight: its Admit is the
	// jsonrpc.ConnOptions.Admit of a session of caller, whose requests'
	// bytes count against caller's budget and the hub's.
	Inflight() *inflight.Budgets
	// Panics takes the panics the face recovered from (see Hub.Panics).
	Panics() *panics.Counter
}

// SessionOptions say how to open a session (Host.OpenSession).
type SessionOptions struct {
	// ID names it (see Open); Transport says how it came.
	ID, Transport string
	// Profile is the view it sees ("" the whole config's): an unknown one
	// fails with ErrUnknownProfile.
	Profile string
	// Who is its caller, nil when the face knows none.
	Who *identity.Identity
	// State, when set, resumes a session initialized elsewhere, as
	// initialize would have left it (see SessionState): its Profile and
	// Identity stand for Profile and Who.
	State *SessionState
	// Peer reaches the client.
	Peer Peer
	// SignIn, when set, sends the session's caller to sign in to a
	// per-user server (see SignInLinker); nil: the face cannot.
	SignIn SignInLinker
}

// SignInLinker is how a face sends its caller to sign in to a server
// through the hub (server/peruser's Linker): the HTTP face's sessions
// are.
type SignInLinker = peruser.Linker

// SessionState is a session's small state, what initialize negotiated and
// what the hub needs to go on serving it: serialisable, so that a face
// can seal it into the session id and another process resume the session
// from it (see SessionOptions.State). What changes later (the log level
// by logging/setLevel, subscriptions) is the state of the process that
// saw the change: a resumed session starts from what was sealed.
type SessionState struct {
	ProtocolVersion string                 `json:"v,omitempty"`
	ClientInfo      mcp.Implementation     `json:"ci"`
	Capabilities    mcp.ClientCapabilities `json:"cc"`
	CapsKnown       bool                   `json:"ck,omitempty"`
	LogLevel        mcp.LoggingLevel       `json:"ll,omitempty"`
	Profile         string                 `json:"p,omitempty"` // the profile the session sees
	Identity        *identity.Identity     `json:"id,omitempty"`
}

// State is the session's state now (see SessionState).
func (s *Session) State() SessionState {
	ss := s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return SessionState{ProtocolVersion: ss.protocolVersion, ClientInfo: ss.clientInfo, Capabilities: ss.capabilities,
		CapsKnown: ss.capsKnown, LogLevel: ss.logLevel, Profile: ss.profile, Identity: ss.who}
}

// OpenSession opens a session as o says: open, or resumed from o.State,
// with the face's sign-in links (SessionOptions.SignIn).
func (h *Hub) OpenSession(o SessionOptions) (*Session, error) {
	var s *Session
	var err error
	if o.State != nil {
		s, err = h.open(o.ID, o.Transport, o.State.Profile, o.State.Identity, o.Peer)
	} else {
		s, err = h.open(o.ID, o.Transport, o.Profile, o.Who, o.Peer)
	}
	if err != nil {
		return nil, err
	}
	if o.State != nil {
		s.sess.resume(*o.State)
	}
	// Before the face starts the session's connection: no request reads
	// it before this write.
	s.sess.linker = o.SignIn
	return s, nil
}

// Answer answers msg, one request of a caller that has no session (a
// request of 2026-07-28 that came without Mcp-Session-Id), as
// Session.Request would, without a session: its client is the request's
// alone (oneRequest: its caller, its profile and what its _meta states,
// o.Peer its response), never listed (no sessions list, inspector or
// event loop sees it) and forgotten when Answer returns. o.State is
// ignored, and a listen, which lasts as long as a session, is refused: a
// face opens a session for it. It starts no goroutine of its own: the
// face calls it on the goroutine that read the request, and ctx is the
// request's.
func (h *Hub) Answer(ctx context.Context, o SessionOptions, msg *jsonrpc.Message) (res json.RawMessage, err error) {
	defer h.recovered(msg.Method, &res, &err)
	if msg.Method == listen.Method {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "dynamic-mcp: "+listen.Method+" holds a session open: it cannot be answered without one")
	}
	if o.Profile != "" && !h.HasProfile(o.Profile) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProfile, o.Profile)
	}
	c := &oneRequest{clientState: clientState{id: o.ID, transport: o.Transport, profile: o.Profile, who: o.Who, peer: o.Peer,
		linker: o.SignIn, logLevel: mcp.LoggingLevelInfo}}
	// Unlisted, but found as its call's owner (routes.Table.Of): its
	// progress comes down the request's response, and an upstream's
	// request during its call and its tasks are its own.
	if err := h.routes.AddUnlisted(c); err != nil {
		return nil, err
	}
	defer h.routes.Remove(c) // what the request left (its tasks' routes, its connections) goes
	return h.serve(ctx, c, msg)
}

// ErrClientGone fails what the hub asks of a client that has left.
var ErrClientGone = errors.New("the client has gone")

// Session is one client's conversation with the hub, from Hub.Open to
// Close.
type Session struct {
	hub  *Hub
	sess *session

	ctx    context.Context // the session's life: ends at Close
	cancel context.CancelFunc
	once   sync.Once
}

// Open opens a session for a client that peer reaches: id names it (in
// logs, the inspector and sessions lists; unique among open sessions) and
// transport says how it came (stdio, streamable-http or sse). Close ends
// it.
func (h *Hub) Open(id, transport string, peer Peer) (*Session, error) {
	return h.open(id, transport, "", nil, peer)
}

// open is Open of a session that sees profile's view ("" the whole
// config's; one the config does not have fails with ErrUnknownProfile)
// and whose caller is who (nil: unknown), both set before the session is
// known to anything that reads it: the caller is on the session for
// per-user rate limits, the audit trail, the inspector and traces.
func (h *Hub) open(id, transport, profile string, who *identity.Identity, peer Peer) (*Session, error) {
	s, err := h.prepare(id, transport, profile, who, peer)
	if err != nil {
		return nil, err
	}
	if err := h.enlist(s); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare is the session open makes, known to nothing yet: a face that
// must hand its connection the session's methods before the session's
// Peer (that connection) exists sets the Peer, then enlists it (stdio).
func (h *Hub) prepare(id, transport, profile string, who *identity.Identity, peer Peer) (*Session, error) {
	if profile != "" && !h.HasProfile(profile) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProfile, profile)
	}
	s := &Session{hub: h, sess: newSession(id, transport)}
	s.sess.peer, s.sess.profile, s.sess.who = peer, profile, who
	return s, nil
}

// enlist starts s's life and lists it in the session table: from now on
// the hub may reach its client.
func (h *Hub) enlist(s *Session) error {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := h.routes.Add(s.sess); err != nil {
		s.cancel()
		return err
	}
	return nil
}

// ID is the session's id, as Open was given it.
func (s *Session) ID() string { return s.sess.id }

// Context ends when the session is closed.
func (s *Session) Context() context.Context { return s.ctx }

// endListens ends the session's listens, with their results: the
// client's input has ended (stdin closed), and a listen, which only the
// client ends, would hold the session's last requests open.
func (s *Session) endListens() { s.sess.lists.End() }

// Notification takes one of the client's notifications. It never waits
// on anyone, so a face may call it on the goroutine that reads the
// client. The face itself acts on notifications/cancelled (it cancels the
// request it names) before or after.
func (s *Session) Notification(msg *jsonrpc.Message) {
	s.hub.routes.ClientNotification(s.ctx, s.sess, msg)
}

// Close ends the session: the hub forgets it (its subscriptions, its
// own upstream connections) and stops what it started for it. The face
// cancels the client's requests in flight and fails the hub's requests to
// the client itself (through its Peer). Calling it again does nothing.
func (s *Session) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.hub.routes.Remove(s.sess)
	})
	return nil
}

// Settings are the settings of the hub's current config a face applies
// to what clients send: the largest message (MaxMessageSize) and how many
// requests one session may have in flight (SessionInflight). A reload may
// change them; a face reads them when it needs them.
func (h *Hub) Settings() config.Settings { return h.config().Settings }

// HasProfile reports whether the current config has the profile name.
func (h *Hub) HasProfile(name string) bool {
	_, ok := h.config().Profiles[name]
	return ok
}

// ErrUnknownProfile is the error of a session opened in a profile the
// config does not have.
var ErrUnknownProfile = errors.New("no such profile")

// Stateless reports whether a request uses the stateless protocol of
// 2026-07-28 or later, which needs no session: a face hands it to
// Host.Answer, which serves it on a value of that request alone.
func Stateless(msg *jsonrpc.Message) bool { return msg.IsRequest() && era.Modern(msg.Params) }

// ProtocolVersion is the protocol version a request's params._meta names,
// "" when it names none: over HTTP the face holds it against the
// MCP-Protocol-Version header (2026-07-28, transports).
func ProtocolVersion(msg *jsonrpc.Message) string { return era.MetaVersion(msg.Params) }
