package mcphttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/relay"
	"github.com/dynamic-mcp/dynamic-mcp/server/signin"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Options configure the HTTP face.
type Options struct {
	// Token is the bearer token every request but the public endpoints
	// (see HandlePublic) may carry: the credential named
	// httpguard.DefaultCredential.
	Token string
	// Tokens are more credentials, by name, each a client of its own:
	// a session belongs to the credential that made it.
	Tokens map[string]string
	// NoAuth serves without a token; the caller allows it on loopback only.
	NoAuth bool
	// AllowedOrigins may send requests besides loopback origins.
	AllowedOrigins []string
	// Loopback says the hub listens on loopback only, so that requests
	// naming another Host are refused (DNS rebinding).
	Loopback bool
	// MaxSessions caps the sessions open at once; default
	// config.DefaultMaxSessions. See config.HTTP for this and the rest.
	MaxSessions int
	// BodyTimeout bounds reading one request body.
	BodyTimeout time.Duration
	// MaxInflight caps the client requests in flight across sessions.
	MaxInflight int
	// MaxBodyMemory caps the bytes of bodies being read and decoded.
	MaxBodyMemory int
	// MaxAuthFailures is how many failed token attempts an address may
	// make in a minute.
	MaxAuthFailures int
	// ClientShare is the part of MaxSessions and of MaxInflight one
	// credential may hold when there is more than one; default
	// config.DefaultClientShare (see clientShares).
	ClientShare float64
	// Auth, when enabled, makes the face an OAuth 2.1 resource server:
	// JWT access tokens of its issuer for its audience are let in besides
	// the tokens, each caller a client of its own, in the profile its
	// claims choose (server/httpguard).
	Auth *config.HTTPAuth
	// SessionKeys, when set, seal each Streamable HTTP session's state
	// into its Mcp-Session-Id, so that a Server with the same keys (another
	// replica, or this one restarted) resumes the session from its id
	// (seal.go, resume.go). Each is 32 bytes; the first seals, all open.
	SessionKeys [][]byte
	// Store, with SessionKeys, is the store every replica shares: a
	// sealed session's GET stream events, the client's answers to the
	// hub's requests, its cancellations and log level, and its DELETE go
	// through it to whichever replica needs them (server/relay), and so do
	// the pending per-user sign-ins (server/signin). Nil: none, and
	// each replica keeps these to itself.
	Store shared.Store
	// SignIns run the per-user servers' sign-ins (server/signin); the
	// upstream.Manager does. Nil: a caller cannot be sent to sign in.
	SignIns signin.UserSignIns
	// TrustedProxies are the balancers whose X-Forwarded-For (or
	// Forwarded) header names the client (server/httpguard); nil: the peer is
	// the client.
	TrustedProxies []netip.Prefix

	// sessionBytes bounds the bytes of one session's requests in flight;
	// 0: jsonrpc.DefaultMaxInflightBytes. Tests scale it down.
	sessionBytes int64
	// writeTimeout bounds one write of an event stream (a POST's, the GET
	// stream, a listen's, legacy SSE's); 0: writeTimeout. Tests set it.
	writeTimeout time.Duration
}

// UserSignIns are the sign-ins of each user to the servers with auth
// (see signin.UserSignIns).
type UserSignIns = signin.UserSignIns

// idleSession is how long a session with no request and no open stream
// lives on before it is closed.
const idleSession = 30 * time.Minute

// keepAlive is how often an idle SSE stream gets a comment, so proxies do
// not close it.
const keepAlive = 25 * time.Second

// writeTimeout bounds one write to an HTTP client: a response, or an
// event on a stream. A client that does not read loses that stream.
const writeTimeout = jsonrpc.DefaultWriteTimeout

// Server serves a hub over Streamable HTTP at /mcp and legacy HTTP+SSE at
// /sse and /message, to many clients at once, each in a session of its
// own; what else it serves (health, metrics, the inspector) its owner
// mounts with Handle, HandlePage and HandlePublic.
type Server struct {
	hub    server.Host
	opts   Options
	logger *slog.Logger
	mux    *http.ServeMux
	mcp    http.Handler // /mcp, behind the guard: the mux's, served without its lookup (ServeHTTP)

	sessions *sessionTable // the sessions open here (sessions.go)

	inflight inflight          // client requests being answered, all sessions (limits.go)
	kept     atomic.Int64      // bytes of GET stream events kept, all sessions (eventlog.go)
	bodies   bodyReader        // reads POSTs within the budget of bodies (body.go)
	shares   *httpguard.Shares // each client's part of the caps
	guard    *httpguard.Guard  // the checks of every endpoint but the public ones
	listens  listenCount       // open listens of each credential (listen.go)
	modern   modernCalls       // 2026-07-28 requests in flight, for their cancellations (modernnotify.go)
	signIns  *signin.Pages     // the per-user sign-in pages and links

	sealer   *sealer          // nil without session keys
	relay    *relay.Relay     // nil without a store and session keys (relayed.go)
	resumeMu sync.Mutex       // one resume at a time, so that two requests of one session make it once
	ended    endedSessions    // sealed sessions ended by DELETE here (resume.go)
	deleted  endedSessions    // the streams of sessions ended by DELETE at other replicas, as the relay hears (resume.go)
	now      func() time.Time // the clock of sealed ids' expiry; tests set it
	draining *drain           // started by Drain: no new sessions, GET streams close (drain.go)

	stop chan struct{}   // closed by Close: handlers and streams return
	life context.Context // ends at Close: the sessionless requests' end (sessionless.go)
	end  context.CancelFunc
	wg   sync.WaitGroup // the janitor (each session's Conn owns its requests' goroutines)
	once sync.Once
}

// New builds the HTTP face of hub (a *server.Hub: the face asks nothing
// else of it). Close stops it.
func New(hub server.Host, opts Options, logger *slog.Logger) *Server {
	opts = opts.withDefaults()
	s := &Server{hub: hub, opts: opts, logger: logger, mux: http.NewServeMux(), stop: make(chan struct{}),
		guard: httpguard.NewGuard(httpguard.GuardOptions{Token: opts.Token, Tokens: opts.Tokens, NoAuth: opts.NoAuth,
			AllowedOrigins: opts.AllowedOrigins, Loopback: opts.Loopback, MaxAuthFailures: opts.MaxAuthFailures, Auth: opts.Auth, Logger: logger})}
	s.shares = httpguard.NewShares(opts.MaxSessions, opts.MaxInflight, opts.ClientShare, s.guard.Credentials())
	s.inflight.max, s.inflight.shares = int64(opts.MaxInflight), s.shares
	s.bodies = bodyReader{byteBudget: newByteBudget(opts.MaxBodyMemory, s.shares.Of(opts.MaxBodyMemory)), timeout: opts.BodyTimeout, hub: hub}
	sl, err := newSealer(opts.SessionKeys)
	if err != nil {
		panic("mcphttp: Options.SessionKeys: each key must be 32 bytes: " + err.Error())
	}
	s.sealer, s.now, s.draining = sl, time.Now, newDrain()
	s.life, s.end = context.WithCancel(context.Background())
	s.sessions = newSessionTable(opts.MaxSessions, s.shares, logger)
	if sl != nil && opts.Store != nil {
		s.relay = newRelay(s)
	}
	s.mcp = s.guard.Check(http.HandlerFunc(s.streamable))
	s.mux.Handle("/mcp", s.mcp)
	s.mux.Handle("/mcp/p/{name}", s.guard.Check(http.HandlerFunc(s.profiled)))
	s.mux.Handle("/sse", s.guard.Check(http.HandlerFunc(s.legacyStream)))
	s.mux.Handle("/message", s.guard.Check(http.HandlerFunc(s.legacyMessage)))
	s.signIns, err = signin.New(signin.Options{SignIns: opts.SignIns, Store: opts.Store, Keys: opts.SessionKeys, Auth: opts.Auth, BodyTimeout: opts.BodyTimeout, Logger: logger})
	if err != nil {
		panic("mcphttp: Options.SessionKeys: " + err.Error())
	}
	s.signIns.Mount(s.mux, s.guard.CheckPage)
	if opts.Auth.Enabled() {
		s.mux.Handle(httpguard.WellKnownResource, httpguard.ResourceMetadata(opts.Auth))
		s.mux.Handle(httpguard.WellKnownResource+"/{path...}", httpguard.ResourceMetadata(opts.Auth))
	}
	s.wg.Go(func() { s.sessions.janitor(s.stop) })
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = httpguard.WithClientAddr(r, s.opts.TrustedProxies)
	if r.URL.Path == "/mcp" && r.URL.RawPath == "" && r.Method != http.MethodConnect {
		s.mcp.ServeHTTP(w, r) // the route the mux would find, found without it
		return
	}
	// A GET or DELETE skips the second lookup of its route.
	if r.ContentLength != 0 {
		if h, pattern := s.mux.Handler(r); pattern == "" || reflect.TypeOf(h) == redirectType {
			// No route (404, 405), or a redirect to the path cleaned
			// (//mcp): the body is never read (httpguard.CloseUnread).
			httpguard.CloseUnread(w, r)
		}
	}
	s.mux.ServeHTTP(w, r)
}

// redirectType is the type of the mux's redirects (http.RedirectHandler).
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// Guard is the face's checks, for a handler that picks them itself (such
// as /readyz, whose reasons only a request with the token sees).
func (s *Server) Guard() *httpguard.Guard { return s.guard }

// Handle serves pattern (a ServeMux pattern, such as "/metrics") with
// next, behind the same checks as /mcp: Origin, Host and the bearer
// token, a static one (Guard.CheckOperator: a caller signed in by
// http.auth is refused). It must be called before the server serves. No
// request's body is waited for there (httpguard.UnreadBody).
func (s *Server) Handle(pattern string, next http.Handler) {
	s.mux.Handle(pattern, httpguard.UnreadBody(s.guard.CheckOperator(next)))
}

// HandlePage serves pattern with next behind the Origin and Host checks
// but not the token (see Guard.CheckPage): for a page a browser navigates
// to, such as the inspector's. It must be called before the server serves.
// No request's body is waited for there (httpguard.UnreadBody).
func (s *Server) HandlePage(pattern string, next http.Handler) {
	s.mux.Handle(pattern, httpguard.UnreadBody(s.guard.CheckPage(next)))
}

// HandlePublic serves pattern with next behind no check at all: for a
// load balancer's probes (/healthz, /readyz). It must be called before the
// server serves. No request's body is waited for there
// (httpguard.UnreadBody).
func (s *Server) HandlePublic(pattern string, next http.Handler) {
	s.mux.Handle(pattern, httpguard.UnreadBody(next))
}

// Close ends every session, and with them their requests in flight and
// open streams, and waits for every goroutine the face started. Calling it
// again does nothing.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.stop)
		s.end()
		s.sessions.close()
		s.wg.Wait()
		s.signIns.Close()
		if s.relay != nil {
			s.relay.Close()
		}
	})
	return nil
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
