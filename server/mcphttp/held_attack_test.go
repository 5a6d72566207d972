package mcphttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// heldWait is the startup_wait of coldHub: how long a flat client's
// handshake, or a first list, is held for an upstream that never lists.
const heldWait = 2 * time.Second

// coldHub runs a flat hub whose one upstream was never run and never
// lists its tools (its gate never opens), with startup_wait heldWait. It
// returns the hub and a time no later than its start.
func coldHub(t *testing.T) (*server.Hub, time.Time) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	yaml := flatFakeYAML(t.TempDir(), fmt.Sprintf("startup_wait: %s", heldWait), fmt.Sprintf("    args: [-gate, %q]\n", gate))
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	mgr := upstream.New(cfg, testLogger())
	h, err := server.New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close() })
	return h, before
}

// heldAnswer is one attacker's request and how it was answered.
type heldAnswer struct {
	status int
	body   string
	at     time.Time
}

// postAll posts n copies of a request at once, made by req, and returns
// their answers.
func postAll(t *testing.T, n int, req func() *http.Request) []heldAnswer {
	t.Helper()
	out := make([]heldAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := testClient.Do(req())
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out[i] = heldAnswer{resp.StatusCode, string(b), time.Now()}
		})
	}
	wg.Wait()
	return out
}

// Many clients held at once while a never-run upstream has not listed
// (a flat client's initialize, a 2026-07-28 client's first tools/list,
// each with no session) are as many as the caps allow: past
// max_sessions an initialize, past max_inflight a sessionless request,
// is refused at once with 503, not held, and leaves no session behind
// (an initialize refused for want of room in flight left its session
// open, unknown to its client, until the cap closed it); each held one
// is answered at startup_wait from the hub's start, and once all are
// answered no goroutine waits for the upstream or serves a request.
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
			h, started := coldHub(t)
			hs, ts := serveHTTPWith(t, h, Options{MaxSessions: sessions, MaxInflight: inflight, ClientShare: 1})
			answers := postAll(t, attackers, func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				tc.more(req)
				return req
			})
			held, refused := 0, 0
			released := started.Add(heldWait)
			for i, a := range answers {
				switch {
				case a.status == http.StatusOK && strings.Contains(a.body, `"result"`):
					held++
					if a.at.Before(released) {
						t.Errorf("request %d was answered %v after the hub's start, before startup_wait (%v)", i, a.at.Sub(started), heldWait)
					}
				case a.status == http.StatusServiceUnavailable:
					refused++
					if !a.at.Before(released) {
						t.Errorf("request %d was refused only %v after the hub's start: held first", i, a.at.Sub(started))
					}
				default:
					t.Errorf("request %d: %d %.300s", i, a.status, a.body)
				}
			}
			t.Logf("%d held and answered, %d refused at once", held, refused)
			if held == 0 || held > tc.cap || held+refused != attackers {
				t.Errorf("%d of %d held, %d refused; want at most %d held", held, attackers, refused, tc.cap)
			}
			if tc.name == "initialize" && sessionCount(hs) != held {
				t.Errorf("%d sessions open after %d initializes were answered", sessionCount(hs), held)
			}
			waitFor(t, 10*time.Second, "the goroutines of the held requests to end", func() bool {
				buf := make([]byte, 1<<20)
				stacks := string(buf[:runtime.Stack(buf, true)])
				return !strings.Contains(stacks, "awaitView") && !strings.Contains(stacks, "answerSessionless")
			})
		})
	}
}
