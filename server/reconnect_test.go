package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// blinkingUpstream is a Streamable HTTP server whose tools/call of boom
// answers 503, as a proxy in front of a server that is gone does: the hub
// ends the session and connects again. The initialize of every session
// after the first waits until gate is closed.
type blinkingUpstream struct {
	gate     chan struct{}
	mu       sync.Mutex
	sessions int
}

func (u *blinkingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, method := jsonrpc.Field(body, "id"), string(jsonrpc.Field(body, "method"))
	res := `{}`
	switch {
	case id == nil:
		w.WriteHeader(http.StatusAccepted)
		return
	case method == `"server/discover"`: // a server of 2025-11-25
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.EncodeError(id, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")))
		return
	case method == `"initialize"`:
		u.mu.Lock()
		u.sessions++
		n := u.sessions
		u.mu.Unlock()
		if n > 1 {
			select {
			case <-u.gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Mcp-Session-Id", fmt.Sprint("s", n))
		res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"blink","version":"1"}}`
	case method == `"tools/list"`:
		res = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}},{"name":"secret","inputSchema":{"type":"object"}}]}`
	case strings.Contains(string(body), `"boom"`):
		http.Error(w, "upstream gone", http.StatusServiceUnavailable)
		return
	case method == `"tools/call"`:
		res = `{"content":[{"type":"text","text":"echoed"}]}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonrpc.EncodeResult(id, json.RawMessage(res)))
}

// While a group's session is made again after it was lost, its tools are
// not "not found": a call waits for the new session within startup_wait,
// and is answered by it, or else is told the upstream is reconnecting. A
// tool the group denies is answered as not found all along.
func TestReconnectingGroupIsNotNotFound(t *testing.T) {
	t.Parallel()
	u := &blinkingUpstream{gate: make(chan struct{})}
	ts := httptest.NewServer(u)
	t.Cleanup(ts.Close)
	yaml := fmt.Sprintf(`mode: flat
state_dir: %q
audit: {path: "off"}
settings: {startup_wait: 300ms, call_timeout: 10s}
groups:
  g:
    description: remote
    url: %q
    deny: ["^secret$"]
    retry: {initial_interval: 10ms}
`, t.TempDir(), ts.URL+"/mcp")
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, testLogger())
	h, err := New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close() })
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["g__echo"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"g__boom","arguments":{}}}`)
	if got := reply(c, "1"); !strings.Contains(got, "503") {
		t.Fatalf("boom: %s", got)
	}
	s := mgr.Servers()[0]
	await.For(t, 10*time.Second, "the upstream to reconnect", func() bool { return s.Status().Reconnecting })

	// The new session's initialize waits for the gate: past startup_wait,
	// the call is told why.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"g__echo","arguments":{}}}`)
	if got := reply(c, "2"); strings.Contains(got, "not found") || !strings.Contains(got, "reconnecting") {
		t.Errorf("a call while the group reconnects: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"g__secret","arguments":{}}}`)
	if got := reply(c, "3"); !strings.Contains(got, `"code":-32601`) || !strings.Contains(got, "Tool not found: g__secret") {
		t.Errorf("a denied tool while the group reconnects: %s", got)
	}

	// A call made while it reconnects is answered by the new session:
	// startup_wait now bounds a hang, not the new session's handshake,
	// which the call waits for (300 ms, after the gate opens, were not
	// enough on a busy machine). The reload keeps the group's server, and
	// so its reconnection.
	long, err := config.Parse("test.yaml", strings.NewReader(strings.Replace(yaml, "startup_wait: 300ms, call_timeout: 10s", "startup_wait: 2m, call_timeout: 2m", 1)))
	if err != nil {
		t.Fatal(err)
	}
	mgr.Apply(long)
	h.SetConfig(long)
	if mgr.Servers()[0] != s || !s.Status().Reconnecting {
		t.Fatalf("the reload replaced the server, or it is no longer reconnecting (%+v)", s.Status())
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"g__echo","arguments":{}}}`)
	close(u.gate)
	if got := reply(c, "4"); !strings.Contains(got, "echoed") {
		t.Errorf("a call across the reconnection: %s", got)
	}
}
