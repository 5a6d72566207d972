package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// HTTPOptions configure the hub's HTTP face.
type HTTPOptions struct {
	// Token is the bearer token every request but /healthz must carry.
	Token string
	// NoAuth serves without a token; the caller allows it on loopback only.
	NoAuth bool
	// AllowedOrigins may send requests besides loopback origins.
	AllowedOrigins []string
	// Loopback says the hub listens on loopback only, so that requests
	// naming another Host are refused (DNS rebinding).
	Loopback bool
}

// idleSession is how long a session with no request and no open stream
// lives on before it is closed.
const idleSession = 30 * time.Minute

// keepAlive is how often an idle SSE stream gets a comment, so proxies do
// not close it.
const keepAlive = 25 * time.Second

// HTTPServer serves the hub over Streamable HTTP at /mcp, legacy HTTP+SSE
// at /sse and /message, and /healthz, to many clients at once, each in a
// session of its own.
type HTTPServer struct {
	hub  *Hub
	opts HTTPOptions
	mux  *http.ServeMux

	mu       sync.Mutex // guards sessions
	sessions map[string]*httpSession

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// NewHTTPServer builds the HTTP face of h. Close stops it.
func (h *Hub) NewHTTPServer(opts HTTPOptions) *HTTPServer {
	s := &HTTPServer{hub: h, opts: opts, mux: http.NewServeMux(), sessions: map[string]*httpSession{}, stop: make(chan struct{})}
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	s.mux.Handle("/mcp", s.guard(http.HandlerFunc(s.streamable)))
	s.mux.Handle("/sse", s.guard(http.HandlerFunc(s.legacyStream)))
	s.mux.Handle("/message", s.guard(http.HandlerFunc(s.legacyMessage)))
	// Many clients can answer sampling, elicitation and roots requests:
	// upstreams are told so, and a client that cannot gets a clear error.
	h.mgr.SetClientCapabilities(mcp.ClientCapabilities{
		Sampling: &mcp.SamplingCapability{}, Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true},
	})
	s.wg.Add(1)
	go s.janitor()
	return s
}

func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

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

// guard checks what every request but /healthz must pass: an allowed
// Origin and Host (DNS-rebinding protection) and the bearer token. The
// token is the hub's own; it is never passed to an upstream.
func (s *HTTPServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if s.opts.Loopback && !loopbackHost(r.Host) {
			http.Error(w, "Forbidden: host not allowed", http.StatusForbidden)
			return
		}
		if !s.opts.NoAuth {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="dynamic-mcp"`)
				http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *HTTPServer) originAllowed(origin string) bool {
	for _, o := range s.opts.AllowedOrigins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Host)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// httpSession is a client session over HTTP: the streams its messages can
// go down.
type httpSession struct {
	*session
	ctx    context.Context // the session's life: cancelled when it ends
	cancel context.CancelFunc

	mu         sync.Mutex   // guards the fields below
	streams    []*sseStream // open POST response streams, oldest first
	standalone *sseStream   // the GET stream, or the legacy SSE stream
	lastSeen   time.Time
	ended      bool
}

type streamKey struct{}

// deliver sends a message the hub initiated: down the stream of the
// request it belongs to when that is open, else the most recent open
// request stream, else the GET stream; with none open it is dropped.
func (hs *httpSession) deliver(ctx context.Context, msg []byte) {
	if st, ok := ctx.Value(streamKey{}).(*sseStream); ok && st.send(msg) {
		return
	}
	hs.mu.Lock()
	candidates := make([]*sseStream, 0, len(hs.streams)+1)
	for i := len(hs.streams) - 1; i >= 0; i-- {
		candidates = append(candidates, hs.streams[i])
	}
	if hs.standalone != nil {
		candidates = append(candidates, hs.standalone)
	}
	hs.mu.Unlock()
	for _, st := range candidates {
		if st.send(msg) {
			return
		}
	}
}

func (hs *httpSession) touch() {
	hs.mu.Lock()
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

func (hs *httpSession) addStream(st *sseStream) {
	hs.mu.Lock()
	hs.streams = append(hs.streams, st)
	hs.mu.Unlock()
}

func (hs *httpSession) removeStream(st *sseStream) {
	hs.mu.Lock()
	for i, x := range hs.streams {
		if x == st {
			hs.streams = append(hs.streams[:i], hs.streams[i+1:]...)
			break
		}
	}
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// end closes the session for good.
func (hs *httpSession) end(h *Hub) {
	hs.mu.Lock()
	if hs.ended {
		hs.mu.Unlock()
		return
	}
	hs.ended = true
	hs.mu.Unlock()
	hs.cancel()
	h.removeSession(context.Background(), hs.session)
}

// newHTTPSession creates and registers a session.
func (s *HTTPServer) newHTTPSession() (*httpSession, error) {
	hs := &httpSession{lastSeen: time.Now()}
	hs.session = newSession(newSessionID(), hs)
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	if err := s.hub.addSession(hs.ctx, hs.session); err != nil {
		return nil, err
	}
	go hs.session.drain(hs.ctx)
	s.mu.Lock()
	s.sessions[hs.id] = hs
	s.mu.Unlock()
	return hs, nil
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
			if len(hs.streams) == 0 && hs.standalone == nil && time.Since(hs.lastSeen) > idleSession {
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

// sseStream is one open text/event-stream response.
type sseStream struct {
	mu     sync.Mutex // guards writes and closed
	w      http.ResponseWriter
	rc     *http.ResponseController
	closed bool
}

func openStream(w http.ResponseWriter, extra http.Header) *sseStream {
	for k, v := range extra {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	_ = st.rc.Flush()
	return st
}

// send writes one message as an SSE event; false when the stream is gone.
func (st *sseStream) send(msg []byte) bool {
	return st.event("message", msg)
}

func (st *sseStream) event(name string, data []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		st.closed = true
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.closed = true
		return false
	}
	return true
}

func (st *sseStream) ping() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	if _, err := io.WriteString(st.w, ": keep-alive\n\n"); err != nil || st.rc.Flush() != nil {
		st.closed = true
	}
	return !st.closed
}

func (st *sseStream) close() {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
}

// hold keeps a stream open until the client goes, the session ends or the
// server stops, with keep-alive comments.
func (s *HTTPServer) hold(r *http.Request, hs *httpSession, st *sseStream) {
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
		case <-hs.ctx.Done():
		case <-s.stop:
		case <-t.C:
			if st.ping() {
				continue
			}
		}
		st.close()
		return
	}
}
