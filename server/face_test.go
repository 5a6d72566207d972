package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// fakeHub runs a hub in flat mode in front of one fake upstream "f"
// started with args, ready to serve.
func fakeHub(t *testing.T, args ...string) *Hub { return fakeHubB(t, args...) }

func fakeHubB(t testing.TB, args ...string) *Hub {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    args: ["+strings.Join(quoted, ", ")+"]\n"), true)
	waitFor(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	waitFor(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.flatRoutes["f__echo"]; return ok })
	return h
}

// pipeClient talks to ServeStdio over pipes.
type pipeClient struct {
	t    testing.TB
	w    *io.PipeWriter
	r    *bufio.Reader
	pr   *io.PipeReader
	done chan error
}

func servePipes(t testing.TB, h *Hub, opts StdioOptions) *pipeClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{t: t, w: inW, r: bufio.NewReaderSize(outR, 1<<20), pr: outR, done: make(chan error, 1)}
	go func() { c.done <- h.ServeStdioWith(context.Background(), inR, outW, opts) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return c
}

func (c *pipeClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// answer reads until the answer to id, skipping notifications.
func (c *pipeClient) answer(id string) string {
	all := c.answerAll(id)
	return all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
}

// answersAt reads until every id is answered, in any order, and returns
// the answers by id with how long after start each was read;
// notifications are skipped.
func (c *pipeClient) answersAt(start time.Time, ids ...string) (map[string]string, map[string]time.Duration) {
	c.t.Helper()
	got, at := map[string]string{}, map[string]time.Duration{}
	for len(got) < len(ids) {
		all := c.readUntil(func(line string) bool { return !strings.Contains(line, `"method"`) })
		line := all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
		for _, id := range ids {
			if strings.Contains(line, `"id":`+id+`,`) {
				got[id], at[id] = line, time.Since(start)
			}
		}
	}
	return got, at
}

// answerAll reads until the answer to id and returns every line read,
// notifications included.
func (c *pipeClient) answerAll(id string) string {
	c.t.Helper()
	return c.readUntil(func(line string) bool {
		return strings.Contains(line, `"id":`+id+`,`) && !strings.Contains(line, `"method"`)
	})
}

// readUntil reads lines until one satisfies done and returns every line
// read, that one last.
func (c *pipeClient) readUntil(done func(line string) bool) string {
	c.t.Helper()
	got := make(chan string, 1)
	go func() {
		var all strings.Builder
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				got <- all.String() + "read: " + err.Error() + "\n"
				return
			}
			all.WriteString(line)
			if done(line) {
				got <- all.String()
				return
			}
		}
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(15 * time.Second):
		c.t.Fatal("no answer within 15s")
		return ""
	}
}

const initializeMsg = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"t","version":"1"}}}`

// A client's roots/list_changed storm does not hold up its own requests,
// and ids come back as the client wrote them.
func TestStdioNotificationsDoNotBlock(t *testing.T) {
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for range 5000 {
		c.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	}
	start := time.Now()
	c.send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`)
	if got := c.answer("9007199254740993"); !strings.Contains(got, `"result":{}`) {
		t.Errorf("ping: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"abc"}}}`)
	if got := c.answer("1e2"); !strings.Contains(got, `"text":"abc"`) {
		t.Errorf("echo: %s", got)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("answers took %v", time.Since(start))
	}
}

// A client that stops reading stdout while an upstream floods it with log
// messages: its notifications are dropped, and once a write waits past the
// write timeout the client is taken to be gone and serving ends cleanly.
func TestStdioClientStopsReading(t *testing.T) {
	h := fakeHub(t, "-flood")
	c := servePipes(t, h, StdioOptions{WriteTimeout: 300 * time.Millisecond})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":50000}}}`)
	// Now read nothing more.
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serving goes on with a client that does not read")
	}
}

// httpClient is a Streamable HTTP client of the hub's HTTP face.
type httpClient struct {
	t       *testing.T
	base    string
	session string
}

func (c *httpClient) post(body string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set(headerSessionID, c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get(headerSessionID); id != "" {
		c.session = id
	}
	return resp, string(b)
}

// stream opens the session's standalone GET stream, until ctx ends or
// the test does.
func (c *httpClient) stream(ctx context.Context) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func newHTTPClient(t *testing.T, base string) *httpClient {
	c := &httpClient{t: t, base: base}
	c.post(initializeMsg)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// serveHTTP serves h's HTTP face with small socket buffers, so that a
// client that stops reading is felt after kilobytes, not megabytes.
func serveHTTP(t *testing.T, h *Hub) *httptest.Server {
	hs := h.NewHTTPServer(HTTPOptions{NoAuth: true})
	ts := httptest.NewUnstartedServer(hs)
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(4096)
		}
		return ctx
	}
	ts.Start()
	t.Cleanup(func() { ts.Close(); hs.Close() })
	return ts
}

// A call with nothing to stream before its result is answered with plain
// JSON; one whose tool sends progress first gets an event stream, the
// progress ahead of the result.
func TestHTTPAnswersJSONUnlessItMustStream(t *testing.T) {
	h := fakeHub(t, "-conformance")
	ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	resp, body := c.post(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.HasPrefix(body, `{"jsonrpc":"2.0","id":"x","result":`) {
		t.Errorf("echo: %s %s", ct, body)
	}
	resp, body = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__test_tool_with_progress","_meta":{"progressToken":"p"}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("progress call answered as %s: %s", ct, body)
	}
	progress, result := strings.Index(body, `notifications/progress`), strings.Index(body, `"id":2,"result"`)
	if progress < 0 || result < 0 || progress > result {
		t.Errorf("stream: %s", body)
	}
}

// One client that opens its GET stream and stops reading does not stall
// the upstream for anyone else: while an upstream floods every session
// with log messages, another session's calls are answered at once.
func TestHTTPSlowClientDoesNotStallOthers(t *testing.T) {
	h := fakeHub(t, "-flood")
	ts := serveHTTP(t, h)
	slow := newHTTPClient(t, ts.URL)
	nc, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(nc, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n", strings.TrimPrefix(ts.URL, "http://"), headerSessionID, slow.session)
	// ...and never read from nc.
	waitFor(t, 5*time.Second, "the GET stream", func() bool {
		hs := h.sessionByID(slow.session)
		return hs != nil && hs.hasStandalone()
	})
	fast := newHTTPClient(t, ts.URL)
	start := time.Now()
	_, body := fast.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":5000}}}`)
	t.Logf("flood of 5000 log messages answered after %v: %.100s", time.Since(start), body)
	for i := range 20 {
		start := time.Now()
		_, body := fast.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`, 100+i))
		if !strings.Contains(body, `"text":"x"`) || time.Since(start) > 3*time.Second {
			t.Fatalf("call %d after %v: %.200s", i, time.Since(start), body)
		}
	}
	if hs := h.sessionByID(slow.session); hs == nil || hs.dropped() == 0 {
		t.Error("nothing was dropped for the client that does not read")
	}
}

// sessionByID is the HTTP session with id, nil when there is none.
func (h *Hub) sessionByID(id string) *httpSession {
	h.routes.mu.Lock()
	defer h.routes.mu.Unlock()
	if s := h.routes.sessions[id]; s != nil {
		hs, _ := s.peer.(*httpSession)
		return hs
	}
	return nil
}

func (hs *httpSession) hasStandalone() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.standalone != nil
}
