package mcphttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// heldWait is the startup_wait of coldHub: longer than a test waits, so
// that what is held stays held until the test opens the upstream's gate.
const heldWait = time.Minute

// coldHub runs a flat hub whose one upstream was never run and does not
// list its tools until open is called (its gate), with startup_wait
// heldWait.
func coldHub(t *testing.T) (_ *server.Hub, open func()) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	yaml := flatFakeYAML(t.TempDir(), fmt.Sprintf("startup_wait: %s", heldWait), fmt.Sprintf("    args: [-gate, %q]\n", gate))
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, testLogger())
	h, err := server.New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close() })
	return h, func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// heldAnswer is one attacker's request and how it was answered.
type heldAnswer struct {
	status int
	body   string
}

// postAll posts n copies of a request at once, made by req, and sends
// their answers on the channel it returns as they come.
func postAll(t *testing.T, n int, req func() *http.Request) <-chan heldAnswer {
	t.Helper()
	out := make(chan heldAnswer, n)
	for range n {
		go func() {
			resp, err := testClient.Do(req())
			if err != nil {
				out <- heldAnswer{body: err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out <- heldAnswer{resp.StatusCode, string(b)}
		}()
	}
	return out
}

// Many clients held at once while a never-run upstream has not listed
// (a flat client's initialize, a 2026-07-28 client's first tools/list,
// each with no session) are as many as the caps allow: past
// max_sessions an initialize, past max_inflight a sessionless request,
// is refused with 503 while the others are held, and leaves no session
// behind (an initialize refused for want of room in flight left its
// session open, unknown to its client, until the cap closed it); each
// held one is answered once the upstream lists, and then no goroutine
// waits for the upstream or serves a request.
func TestAttackHeldHandshakesBounded(t *testing.T) {
	const sessions, inflight, attackers = 6, 4, 20
	for _, tc := range []struct {
		name string
		cap  int
		body string
		more func(*http.Request)
	}{
		{"initialize", sessions, initializeMsg, func(*http.Request) {}},
		{"sessionless tools/list", inflight,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			func(r *http.Request) {
				r.Header.Set(headerProtocolVersion, "2026-07-28")
				r.Header.Set("Mcp-Method", "tools/list")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, open := coldHub(t)
			hs, ts := serveHTTPWith(t, h, Options{MaxSessions: sessions, MaxInflight: inflight, ClientShare: 1})
			answers := postAll(t, attackers, func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				tc.more(req)
				return req
			})
			// Before the upstream lists: each request is refused or held.
			refused := 0
			await.For(t, 30*time.Second, "every request to be refused or held", func() bool {
				for {
					select {
					case a := <-answers:
						if a.status != http.StatusServiceUnavailable {
							t.Fatalf("answered %d before the upstream listed: %.300s", a.status, a.body)
						}
						refused++
						continue
					default:
					}
					return refused+int(hs.inflight.load()) == attackers
				}
			})
			held := attackers - refused
			t.Logf("%d held, %d refused", held, refused)
			if held == 0 || held > tc.cap {
				t.Errorf("%d of %d held, %d refused; want at most %d held", held, attackers, refused, tc.cap)
			}
			if tc.name == "initialize" && sessionCount(hs) != held {
				t.Errorf("%d sessions open while %d initializes are held", sessionCount(hs), held)
			}
			open()
			for range held {
				if a := <-answers; a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) {
					t.Errorf("a held request was answered %d %.300s", a.status, a.body)
				}
			}
			if tc.name == "initialize" && sessionCount(hs) != held {
				t.Errorf("%d sessions open after %d initializes were answered", sessionCount(hs), held)
			}
			await.For(t, 10*time.Second, "the goroutines of the held requests to end", func() bool {
				buf := make([]byte, 1<<20)
				stacks := string(buf[:runtime.Stack(buf, true)])
				return !strings.Contains(stacks, "awaitView") && !strings.Contains(stacks, "answerSessionless")
			})
		})
	}
}
