package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// HTTPOptions configure the hub's HTTP face.
type HTTPOptions struct {
	// Token is the bearer token every request but /healthz and /readyz must carry.
	Token string
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
	// MaxBodyMemory caps the bytes of bodies being read and handled.
	MaxBodyMemory int
	// MaxAuthFailures is how many failed token attempts an address may
	// make in a minute.
	MaxAuthFailures int
}

// idleSession is how long a session with no request and no open stream
// lives on before it is closed.
const idleSession = 30 * time.Minute

// keepAlive is how often an idle SSE stream gets a comment, so proxies do
// not close it.
const keepAlive = 25 * time.Second

// httpWriteTimeout bounds one write to an HTTP client: a response, or an
// event on a stream. A client that does not read loses that stream.
const httpWriteTimeout = jsonrpc.DefaultWriteTimeout

// HTTPServer serves the hub over Streamable HTTP at /mcp, legacy HTTP+SSE
// at /sse and /message, and /healthz and /readyz, to many clients at once,
// each in a session of its own.
type HTTPServer struct {
	hub  *Hub
	opts HTTPOptions
	mux  *http.ServeMux

	mu       sync.Mutex // guards sessions and pending
	sessions map[string]*httpSession
	pending  int // sessions being made, counted against the cap

	inflight atomic.Int64 // client requests being answered, all sessions
	bodies   *byteBudget
	gate     *Guard // the checks of every endpoint but /healthz

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// NewHTTPServer builds the HTTP face of h. Close stops it.
func (h *Hub) NewHTTPServer(opts HTTPOptions) *HTTPServer {
	opts = opts.withDefaults()
	s := &HTTPServer{hub: h, opts: opts, mux: http.NewServeMux(), sessions: map[string]*httpSession{}, stop: make(chan struct{}),
		bodies: newByteBudget(opts.MaxBodyMemory), gate: NewGuard(GuardOptions{Token: opts.Token, NoAuth: opts.NoAuth,
			AllowedOrigins: opts.AllowedOrigins, Loopback: opts.Loopback, MaxAuthFailures: opts.MaxAuthFailures})}
	// /healthz and /readyz are public, for load balancers; why a group is
	// down (which can name internal hosts) only to a request with the token.
	health.Mount(s.mux, h.mgr, s.gate.Check, h.HealthComponents()...)
	s.mux.Handle("/mcp", s.gate.Check(http.HandlerFunc(s.streamable)))
	s.mux.Handle("/sse", s.gate.Check(http.HandlerFunc(s.legacyStream)))
	s.mux.Handle("/message", s.gate.Check(http.HandlerFunc(s.legacyMessage)))
	// Many clients can answer sampling, elicitation and roots requests:
	// upstreams are told so, and a client that cannot gets a clear error.
	h.mgr.SetClientCapabilities(mcp.ClientCapabilities{
		Sampling: &mcp.SamplingCapability{}, Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}, Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true},
	})
	s.wg.Add(1)
	go s.janitor()
	return s
}

func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Handle serves pattern (a ServeMux pattern, such as "/ui/") with next,
// behind the same checks as /mcp: Origin, Host and the bearer token. It
// must be called before the server serves.
func (s *HTTPServer) Handle(pattern string, next http.Handler) {
	s.mux.Handle(pattern, s.gate.Check(next))
}

// HandlePage serves pattern with next behind the Origin and Host checks
// but not the token (see Guard.CheckPage): for a page a browser navigates
// to, such as the inspector's. It must be called before the server serves.
func (s *HTTPServer) HandlePage(pattern string, next http.Handler) {
	s.mux.Handle(pattern, s.gate.CheckPage(next))
}

// Close ends every session and waits for the janitor.
func (s *HTTPServer) Close() error {
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.mu.Lock()
		sessions := s.sessions
		s.sessions = map[string]*httpSession{}
		s.mu.Unlock()
		for _, hs := range sessions {
			hs.end(s.hub)
		}
	})
	return nil
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *HTTPServer) lookup(id string) *httpSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *HTTPServer) drop(hs *httpSession) {
	s.mu.Lock()
	delete(s.sessions, hs.id)
	s.mu.Unlock()
	hs.end(s.hub)
}

// janitor ends sessions that have been idle too long: clients that went
// away without DELETE.
func (s *HTTPServer) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		var idle []*httpSession
		for _, hs := range s.sessions {
			hs.mu.Lock()
			if len(hs.streams) == 0 && hs.standalone == nil && hs.inflight.Len() == 0 && time.Since(hs.lastSeen) > idleSession {
				idle = append(idle, hs)
			}
			hs.mu.Unlock()
		}
		s.mu.Unlock()
		for _, hs := range idle {
			s.hub.logger.Info("closing idle HTTP session", "session", hs.id)
			s.drop(hs)
		}
	}
}
