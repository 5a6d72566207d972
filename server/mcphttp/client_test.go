package mcphttp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
)

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
	resp, err := testClient.Do(req)
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

// send POSTs body in c's session and reads the answer, from any
// goroutine (post may stop the test, which only the test's own may): its
// error, if the POST failed.
func (c *httpClient) send(body string) error {
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// stream opens the session's standalone GET stream, until ctx ends or
// the test does.
func (c *httpClient) stream(ctx context.Context) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
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
func serveHTTP(t *testing.T, h *server.Hub) (*Server, *httptest.Server) {
	return serveHTTPSmall(t, h, Options{}, nil)
}

// serveHTTPSmall is serveHTTP with opts (no auth), its http.Server
// configured further by config when not nil.
func serveHTTPSmall(t *testing.T, h *server.Hub, opts Options, config func(*http.Server)) (*Server, *httptest.Server) {
	opts.NoAuth = true
	hs := New(h, opts, testLogger())
	ts := httptest.NewUnstartedServer(hs)
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(4096)
		}
		return ctx
	}
	if config != nil {
		config(ts.Config)
	}
	ts.Start()
	t.Cleanup(func() { ts.Close(); hs.Close() })
	return hs, ts
}

// A call with nothing to stream before its result is answered with plain
// JSON; one whose tool sends progress first gets an event stream, the
// progress ahead of the result.
func TestHTTPAnswersJSONUnlessItMustStream(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-conformance")
	_, ts := serveHTTP(t, h)
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

// A 2026-07-28 call without a session that asks for progress gets it
// down its POST's event stream, ahead of the result, as a session's call
// does: the request's own client, listed nowhere, is still the one its
// progress is for.
func TestHTTPSessionlessCallGetsItsProgress(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-conformance")
	_, ts := serveHTTP(t, h)
	body := postSessionless(t, ts.URL, "", "tools/call", "f__test_tool_with_progress",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__test_tool_with_progress","_meta":{"progressToken":"p",`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	progress, result := strings.Index(body, `"method":"notifications/progress"`), strings.Index(body, `"id":2,"result"`)
	if progress < 0 || result < 0 || progress > result || !strings.Contains(body[progress:result], `"progressToken":"p"`) {
		t.Errorf("stream: %s", body)
	}
}

// One client that opens its GET stream and stops reading does not stall
// the upstream for anyone else: while an upstream floods every session
// with log messages, another session's calls are answered at once.
func TestHTTPSlowClientDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-flood")
	face, ts := serveHTTP(t, h)
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
	await.For(t, 5*time.Second, "the GET stream", func() bool {
		hs := face.sessions.lookup(slow.session)
		return hs != nil && hs.hasStandalone()
	})
	fast := newHTTPClient(t, ts.URL)
	start := time.Now()
	_, body := fast.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":5000}}}`)
	t.Logf("flood of 5000 log messages answered after %v: %.100s", time.Since(start), body)
	for i := range 20 {
		start := time.Now()
		_, body := fast.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`, 100+i))
		if !strings.Contains(body, `"text":"x"`) || time.Since(start) > 3*time.Second*await.Slow {
			t.Fatalf("call %d after %v: %.200s", i, time.Since(start), body)
		}
	}
	if hs := face.sessions.lookup(slow.session); hs == nil || hs.Dropped() == 0 {
		t.Error("nothing was dropped for the client that does not read")
	}
}

func (hs *httpSession) hasStandalone() bool {
	hs.st.mu.Lock()
	defer hs.st.mu.Unlock()
	return hs.st.standalone != nil
}
