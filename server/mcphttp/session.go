package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// httpSession is a client session over HTTP: the hub's session and the
// one jsonrpc.Conn it runs on, over the session's stream (see
// sessionStream), which takes the messages POSTed and routes what the
// Conn writes. Admission, answer-once, cancellation and the client's
// answers to the hub's requests are the Conn's. It is the session's
// server.Peer.
type httpSession struct {
	id        string
	owner     string             // the credential that made it (httpguard.CredentialOf); no other reaches it
	transport string             // streamable-http or sse
	profile   string             // the profile of the URL it was opened at (/mcp/p/NAME), "" for /mcp
	who       *identity.Identity // the caller (httpguard.IdentityOf); the hub's session shows it
	sess      *server.Session    // the hub's side; set once Open returns
	conn      *jsonrpc.Conn
	st        *sessionStream
	inflight  int             // how many requests the session may have in flight
	client    string          // its credential when clients have shares (clientShares), else ""
	ctx       context.Context // the session's life: cancelled when it ends
	face      *Server         // the face it came through (per-user sign-in links)
	stream    string          // its GET stream's name on every replica, when relayed (relayed.go); set before it is registered
	base      string          // the face's URL as the client reached it (signin.PublicBase)
	cancel    context.CancelFunc
	// oneRequest marks the session of one 2026-07-28 request that came
	// without Mcp-Session-Id: its client has no session to POST an answer
	// to, so the hub's requests are refused at once (see Call).
	oneRequest atomic.Bool

	lastSeen atomic.Int64 // when it was last used, as nanoseconds since epoch: each request sets it twice, at its start and end
	mu       sync.Mutex   // guards ended
	ended    bool
}

// newSession creates a session of the credential owner, the caller who,
// at the URL of profile reached at base (signin.PublicBase), opens it with the
// hub in the profile who's claims choose there (errProfileNotAllowed when
// they allow none), starts its Conn and registers it.
// relayed marks a session whose id will be sealed (an initialize's): with a
// store, its GET stream goes through the relay (relayed.go).
func (s *Server) newSession(transport, owner, profile, base string, who *identity.Identity, relayed bool) (*httpSession, error) {
	seen, err := identity.ChooseProfile(s.opts.Auth, who, profile)
	if err != nil {
		return nil, err
	}
	if s.draining.on() {
		return nil, errDraining // a replica that drains takes no new clients
	}
	return s.startSession(newSessionID(), transport, owner, profile, base, who, func(hs *httpSession) (*server.Session, error) {
		if relayed {
			relayTo(s, hs, 0) // sealed under the first key
		}
		return s.hub.OpenSession(server.SessionOptions{ID: hs.id, Transport: transport, Profile: seen, Who: who, Peer: hs, SignIn: hs})
	})
}

// startSession makes the session id of the credential owner at the URL
// of profile reached at base, opened with the hub by open, starts its Conn and registers
// it.
func (s *Server) startSession(id, transport, owner, profile, base string, who *identity.Identity, open func(*httpSession) (*server.Session, error)) (*httpSession, error) {
	client := s.shares.ClientOf(owner)
	if err := s.sessions.reserve(client); err != nil {
		return nil, err
	}
	hs := &httpSession{
		id:        id,
		owner:     owner,
		profile:   profile,
		who:       who,
		transport: transport,
		st:        newSessionStream(transport == "sse"),
		client:    client,
		face:      s,
		base:      base,
	}
	hs.st.log.total = &s.kept
	hs.touch()
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	settings := s.hub.Settings()
	hs.inflight = settings.SessionInflight
	hs.conn = jsonrpc.NewConn(hs.st, jsonrpc.ConnOptions{
		MaxMessageSize:   settings.MaxMessageSize,
		MaxInflight:      settings.SessionInflight,
		WriteTimeout:     writeTimeout,
		MaxInflightBytes: s.opts.sessionBytes,
		Admit:            s.hub.Inflight().Admit(owner), // bytes in flight per credential and in all
		// The hub's own panic boundary is Session.Request's.
		Handle: func(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) { return hs.sess.Request(ctx, m) },
		Notify: func(m *jsonrpc.Message) { hs.sess.Notification(m) },
		Refused: func(err error, msg []byte) {
			s.logger.Warn("refused a message from an HTTP client", "session", hs.id, "err", err, "bytes", len(msg))
		},
		Panicked:     s.hub.Panics().Recovered,
		CallIDPrefix: s.relay.CallPrefix(),
	})
	sess, err := open(hs)
	if err = s.sessions.add(hs, err, func() { hs.sess = sess; hs.conn.Start() }); err != nil {
		hs.cancel()
		hs.conn.Close()
		if sess != nil {
			sess.Close()
		}
		return nil, err
	}
	return hs, nil
}

// Notify sends the client a notification (server.Peer): down the POST
// stream of the request whose ctx it is sent with while that is open,
// else the GET stream; dropped when there is no room or no stream.
func (hs *httpSession) Notify(ctx context.Context, msg []byte) {
	_ = hs.conn.NotifyRawContext(ctx, msg) // a drop is counted by the Conn (Dropped)
}

// Call sends the client a request and waits for its answer (server.Peer):
// down the stream of the request whose ctx it is sent with, else the GET
// stream, else the POST stream opened last. With none open it fails at
// once.
func (hs *httpSession) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if hs.oneRequest.Load() {
		return nil, oneRequestRefusal(method)
	}
	if !hs.st.reachable(jsonrpc.RelatedID(ctx)) {
		return nil, fmt.Errorf("cannot send %s to the client: no stream open to the client (open GET %s or call with Accept: text/event-stream)", method, "/mcp")
	}
	res, err := hs.conn.Call(ctx, method, params)
	if errors.Is(err, jsonrpc.ErrClosed) {
		return nil, server.ErrClientGone
	}
	return res, err
}

// Listening opens the response of the listen whose request ctx is
// (server.Peer): the hub has taken it (see Server.listen).
func (hs *httpSession) Listening(ctx context.Context) { hs.st.listening(jsonrpc.RelatedID(ctx)) }

// Dropped is how many notifications were lost for the client (server.Peer).
func (hs *httpSession) Dropped() uint64 { return hs.conn.Dropped() + hs.st.lost.Load() }

// Client is the session's client when clients have shares, else ""
// (upstream.ClientOf, through the hub's session): the session's calls to
// servers with isolation: per-session count against its client's share.
func (hs *httpSession) Client() string { return hs.client }

// Answering is how many of the client's requests are in flight (server.Peer).
func (hs *httpSession) Answering() int { return hs.conn.Inflight() }

// epoch is what sessions' lastSeen counts from: a time of the monotonic
// clock, so that idle sessions are told by it as they were by time.Time.
var epoch = time.Now()

func (hs *httpSession) touch() { hs.lastSeen.Store(int64(time.Since(epoch))) }

// idle reports whether the session has no request in flight and no open
// stream, and when it was last used.
func (hs *httpSession) idle() (bool, time.Time) {
	return hs.st.open() == 0 && hs.conn.Inflight() == 0, epoch.Add(time.Duration(hs.lastSeen.Load()))
}

// idleSince reports whether the session is idle and was last used before t.
func (hs *httpSession) idleSince(t time.Time) bool {
	idle, seen := hs.idle()
	return idle && seen.Before(t)
}

func (hs *httpSession) clearStandalone(st *stream) {
	hs.st.clearStandalone(st)
	hs.touch()
}

// end closes the session for good: the client's requests in flight are
// cancelled, the hub's requests to it fail, the streams close, and the
// hub forgets it.
func (hs *httpSession) end() {
	hs.mu.Lock()
	if hs.ended {
		hs.mu.Unlock()
		return
	}
	hs.ended = true
	hs.mu.Unlock()
	hs.cancel()
	hs.conn.Close() // closes hs.st
	hs.st.releaseAll()
	hs.st.forgetEvents()
	hs.sess.Close()
}

// SignInLink is a link for the session's caller to sign in to server
// (server.SignInLinker).
func (hs *httpSession) SignInLink(server, elicitation string) (string, <-chan struct{}, error) {
	if hs.face == nil {
		return "", nil, errors.New("this session's caller has no identity")
	}
	return hs.face.signIns.Link(hs.who, hs.base, server, elicitation, hs)
}
