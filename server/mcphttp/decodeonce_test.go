package mcphttp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A POSTed message is decoded once: the face decodes the body to route
// it, and the session's Conn takes that decoding (Conn.Take, or
// jsonrpc.MessageReader), never the body's bytes to decode again. Every
// decoding of the test's bodies is counted where it happens, in
// jsonrpc.Decode (DecodeHook), whoever decodes: the face, the session's
// Conn if the message reached it undecoded, or anything between. Each
// body carries an id no other test sends, and only the requests are
// counted (an answer echoes the id).
func TestHTTPBodyDecodedOnce(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	const mark = `"decode-once-`
	var decodes atomic.Int64
	defer jsonrpc.DecodeHook(func(msg []byte) {
		if bytes.Contains(msg, []byte(mark)) && bytes.Contains(msg, []byte(`"method"`)) {
			decodes.Add(1)
		}
	})()
	_, ts := serveHTTPWith(t, h, Options{NoAuth: true})
	c := newHTTPClient(t, ts.URL)
	const n = 30
	for i := range n {
		var msg string
		switch i % 3 {
		case 0:
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s%d","method":"ping"}`, mark, i)
		case 1:
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s%d","method":"tools/list"}`, mark, i)
		case 2:
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s%d","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`, mark, i)
		}
		if resp, body := c.post(msg); resp.StatusCode != http.StatusOK || strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %d %s", msg, resp.StatusCode, body)
		}
	}
	if got := decodes.Load(); got != n {
		t.Errorf("%d POSTs (ping, tools/list, tools/call) took %d decodes, want %d", n, got, n)
	}
	// A subscriptions/listen's POST too, taken by the Conn of the session
	// it opens (acknowledged once taken).
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if ack := openListen(ctx, c, mark+`listen"`, `"toolsListChanged":true`).next(); method(ack) != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: %v", ack)
	}
	if got := decodes.Load(); got != n+1 {
		t.Errorf("a subscriptions/listen took %d decodes, want 1", got-n)
	}
}

// A 2026-07-28 tools/call without a session is answered, and leaves no
// goroutine behind it: none of the connection, the session or the hub's
// bookkeeping for it outlives its POST.
func TestHTTPSessionlessCallLeavesNoGoroutine(t *testing.T) {
	h := fakeHub(t)
	face := New(h, Options{NoAuth: true}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	call := func(id int) {
		resp, out, err := sessionlessEcho(hc, ts.URL, id)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"x"`) || resp.Header.Get(headerSessionID) != "" {
			t.Fatalf("sessionless tools/call: %d %v %s", resp.StatusCode, resp.Header, out)
		}
	}
	call(1) // the first call may start what the hub keeps for any call (the upstream's connection)
	settle := func() int {
		// Each connection's goroutines end once it closes: wait for the
		// count to stop falling.
		n := runtime.NumGoroutine()
		await.For(t, 10*time.Second, "the goroutines of a finished request to end", func() bool {
			m := runtime.NumGoroutine()
			stable := m >= n
			n = m
			return stable
		})
		return n
	}
	base := settle()
	for i := range 20 {
		call(i + 2)
	}
	var now int
	await.For(t, 10*time.Second, "the goroutine count to come back", func() bool {
		now = runtime.NumGoroutine()
		return now <= base
	})
	if n := len(h.Sessions().Info()); n != 0 {
		t.Errorf("%d sessions outlived their requests", n)
	}
	// While one runs, neither the face nor the hub holds a session for it.
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"f__hang",`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "f__hang")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	await.For(t, 10*time.Second, "the hanging call to be in flight", func() bool { return face.inflight.load() >= 1 })
	if n, m := len(h.Sessions().Info()), sessionCount(face); n != 0 || m != 0 {
		t.Errorf("a sessionless call in flight: the hub lists %d sessions, the face holds %d; want none", n, m)
	}
	cancel()
	<-done
	await.For(t, 10*time.Second, "the cancelled call to end", func() bool { return face.inflight.load() == 0 })
}
