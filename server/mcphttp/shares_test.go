package mcphttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
)

const (
	shareTokenA = "share-token-of-client-a"
	shareTokenB = "share-token-of-client-b"
)

// shareFace serves h's face with opts and two named credentials, a and
// b: two clients, each with its share of the caps.
func shareFace(t *testing.T, h *server.Hub, opts Options) (*Server, string) {
	opts.Tokens = map[string]string{"a": shareTokenA, "b": shareTokenB}
	face := New(h, opts, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	return face, ts.URL
}

// tokenClient is a client of one credential, in one session.
type tokenClient struct {
	t                    *testing.T
	base, token, session string
}

func (c *tokenClient) post(body string) (int, http.Header, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set(headerSessionID, c.session)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get(headerSessionID); id != "" {
		c.session = id
	}
	return resp.StatusCode, resp.Header, string(b)
}

// open initializes a session of token's; it returns initialize's status.
func openAs(t *testing.T, base, token string) (*tokenClient, int) {
	t.Helper()
	c := &tokenClient{t: t, base: base, token: token}
	code, _, _ := c.post(initializeMsg)
	if code == http.StatusOK {
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return c, code
}

// stream keeps the session's GET stream open until ctx ends: the session
// is not idle meanwhile.
func (c *tokenClient) stream(ctx context.Context, face *Server) {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET stream: %v %v", err, resp)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	await.For(c.t, 5*time.Second, "the GET stream", func() bool { return face.sessions.lookup(c.session).hasStandalone() })
}

func (c *tokenClient) ping() int {
	code, _, _ := c.post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	return code
}

// With two credentials a client holds at most half of http.max_sessions:
// with a cap of 4, a's third session is refused 503 while its two are
// busy, b opens two sessions all the same, and once a's are idle a's next
// session closes one of a's own, never b's.
func TestHTTPClientShareOfSessions(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	face, base := shareFace(t, fakeHub(t), Options{MaxSessions: 4})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var a []*tokenClient
	for range 2 {
		c, code := openAs(t, base, shareTokenA)
		if code != http.StatusOK {
			t.Fatalf("a's session %d: %d", len(a)+1, code)
		}
		c.stream(ctx, face)
		a = append(a, c)
	}
	if _, code := openAs(t, base, shareTokenA); code != http.StatusServiceUnavailable {
		t.Errorf("a's third session, past its share of 2: %d, want 503", code)
	}
	var b []*tokenClient
	for range 2 {
		c, code := openAs(t, base, shareTokenB)
		if code != http.StatusOK || c.ping() != http.StatusOK {
			t.Fatalf("b's session %d while a holds its share: %d", len(b)+1, code)
		}
		b = append(b, c)
	}
	cancel() // a's sessions go idle
	await.For(t, 5*time.Second, "a's sessions to be idle", func() bool {
		for _, c := range a {
			if idle, _ := face.sessions.lookup(c.session).idle(); !idle {
				return false
			}
		}
		return true
	})
	if _, code := openAs(t, base, shareTokenA); code != http.StatusOK {
		t.Errorf("a's session once its others are idle: %d", code)
	}
	gone := 0
	for _, c := range a {
		if c.ping() == http.StatusNotFound {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("%d of a's idle sessions closed for its new one, want 1", gone)
	}
	for i, c := range b {
		if code := c.ping(); code != http.StatusOK {
			t.Errorf("b's session %d after a's new one: %d", i+1, code)
		}
	}
}

// With two credentials a client has at most half of http.max_inflight in
// flight: with a cap of 4, a's third request while two calls run is
// answered 503 with Retry-After, b's requests are served meanwhile, and
// a's are again once its calls end.
func TestHTTPClientShareOfInflight(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	// The calls hang until a cancels them (the call timeout bounds a hang
	// of the test): calls of 1.5 s ended before the test looked, at a load
	// of 110.
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5m", ""), nil)
	face, base := shareFace(t, h, Options{MaxInflight: 4})
	a, _ := openAs(t, base, shareTokenA)
	b, _ := openAs(t, base, shareTokenB)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__hang","arguments":{}}}`, i+1))
		})
	}
	await.For(t, 5*time.Second, "a's two calls in flight", func() bool { return face.inflight.load() == 2 })
	if code, header, _ := a.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
		t.Errorf("a's third request in flight, past its share of 2: %d Retry-After %q", code, header.Get("Retry-After"))
	}
	for range 2 {
		if code := b.ping(); code != http.StatusOK {
			t.Errorf("b's request while a holds its share: %d", code)
		}
	}
	for i := range 2 {
		if code, _, body := a.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i+1)); code != http.StatusAccepted {
			t.Fatalf("cancelling a's call %d: %d %s", i+1, code, body)
		}
	}
	wg.Wait()
	await.For(t, 5*time.Second, "a's calls to end", func() bool { return face.inflight.load() == 0 })
	if code := a.ping(); code != http.StatusOK {
		t.Errorf("a's request once its calls ended: %d", code)
	}
}

// With two credentials a client's sessions hold at most half of
// settings.max_session_processes: with a cap of 2, a's second session's
// call to a server with isolation: per-session fails with the reason
// while its first has a process, and b's session gets one all the same.
func TestHTTPClientShareOfSessionProcesses(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s, stop_grace: 1s, max_session_processes: 2", "    isolation: per-session\n"), nil)
	_, base := shareFace(t, h, Options{})
	pid := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__pid","arguments":{}}}`
	a1, _ := openAs(t, base, shareTokenA)
	a2, _ := openAs(t, base, shareTokenA)
	b1, _ := openAs(t, base, shareTokenB)
	if _, _, body := a1.post(pid); !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a's first session: %s", body)
	}
	if _, _, body := a2.post(pid); !strings.Contains(body, "its share of settings.max_session_processes (1 of 2") {
		t.Errorf("a's second session, past its share of 1: %s", body)
	}
	if _, _, body := b1.post(pid); !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
		t.Errorf("b's session while a holds its share: %s", body)
	}
	if n := mgr.SessionProcesses(); n != 2 {
		t.Errorf("%d session processes, want 2", n)
	}
}

// With two credentials a client reserves at most half of the bytes of
// bodies being read (http.max_body_memory): a client that opens POSTs of
// a large Content-Length and sends nothing holds its share, its next
// such POST is refused 503 at once, and the other client's requests are
// read meanwhile. Before, a's POSTs held the whole budget for the body
// timeout, and each of b's requests waited for room all that time, then
// got 503.
func TestHTTPClientShareOfBodies(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	const budget = 1 << 20
	// The body timeout bounds how long a's silent bodies are held (and the
	// test on the old code, which held them all).
	face, base := shareFace(t, fakeHub(t), Options{MaxBodyMemory: budget, BodyTimeout: time.Minute})
	b, _ := openAs(t, base, shareTokenB)
	silent := func(length int) *bufio.Reader {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", strings.TrimPrefix(base, "http://"), shareTokenA, length)
		return bufio.NewReader(c)
	}
	silent(budget / 2)
	await.For(t, 10*time.Second, "a's silent body to be reserved", func() bool { return face.bodies.used.Load() == budget/2 })
	// The refusal comes at once: the body timeout bounds a hang.
	if resp, err := http.ReadResponse(silent(budget/2), nil); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a's second silent body, past its share: %v %v, want 503", resp, err)
	}
	for range 2 {
		start := time.Now()
		if code := b.ping(); code != http.StatusOK {
			t.Errorf("b's ping while a holds its share of the bodies: %d after %v", code, time.Since(start))
		}
	}
}

// An empty body counts nothing against its client's share, and leaves no
// trace of the client in the budget: with http.auth every user a token
// names is a client of its own, and an entry kept for each that ever
// sent an empty POST would grow without end.
func TestHTTPClientShareOfBodiesEmptyBody(t *testing.T) {
	t.Parallel()
	face, base := shareFace(t, fakeHub(t), Options{MaxBodyMemory: 1 << 20})
	a := &tokenClient{t: t, base: base, token: shareTokenA}
	if code, _, body := a.post(""); code != http.StatusBadRequest {
		t.Fatalf("an empty POST: %d %s, want 400", code, body)
	}
	face.bodies.mu.Lock()
	held := len(face.bodies.held)
	face.bodies.mu.Unlock()
	if held != 0 || face.bodies.used.Load() != 0 {
		t.Errorf("after an empty body the budget keeps %d clients, %d bytes", held, face.bodies.used.Load())
	}
}

// A body refused before it is read (past its client's share of the
// bodies being read) is refused at once whatever its length, and its
// connection closed: a body under 256 KiB, or one without a length
// (chunked), was otherwise read by Go's server before the refusal went
// out (to keep the connection), and a client that sent nothing more held
// the connection, a goroutine and its refusal with no deadline at all:
// the body timeout bounds only a body the hub reads.
func TestHTTPClientShareOfBodiesRefusedUnread(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	face, base := shareFace(t, fakeHub(t), Options{MaxBodyMemory: budget, BodyTimeout: time.Hour})
	addr := strings.TrimPrefix(base, "http://")
	silent := func(framing string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s\r\n\r\n", addr, shareTokenA, framing)
		return c
	}
	silent(fmt.Sprintf("Content-Length: %d", budget/2))
	await.For(t, 10*time.Second, "a's silent body to be reserved", func() bool { return face.bodies.used.Load() == budget/2 })
	for _, framing := range []string{"Content-Length: 100", "Transfer-Encoding: chunked"} {
		t.Run(framing, func(t *testing.T) {
			c := silent(framing)
			// Bounds the hang of the old code, which had none.
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("a's body past its share, %s, sending nothing: no refusal (%v)", framing, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
				t.Errorf("a's body past its share, %s: %d, closing %v; want 503 and the connection closed", framing, resp.StatusCode, resp.Close)
			}
		})
	}
}
