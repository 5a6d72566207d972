package mcphttp

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// initializeEliciting declares that the client can answer elicitations.
const initializeEliciting = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

// isolationHub runs a flat-mode hub over HTTP in front of one fake
// upstream with the isolation given.
func isolationHub(t *testing.T, isolation string) (*Server, *upstream.Manager, string) {
	t.Helper()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s, stop_grace: 1s", "    isolation: "+isolation+"\n"), nil)
	face, ts := serveHTTP(t, h)
	return face, mgr, ts.URL
}

func newElicitingClient(t *testing.T, base string) *httpClient {
	c := &httpClient{t: t, base: base}
	c.post(initializeEliciting)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// askAnswering calls the fake's ask tool, which elicits, on c's session and
// answers the elicitation with name; it returns the call's result line.
func askAnswering(t *testing.T, c *httpClient, name string) string {
	return askAnsweringWith(t, c, `{}`, name)
}

// askAnsweringWith is askAnswering with the ask tool's arguments args.
func askAnsweringWith(t *testing.T, c *httpClient, args, name string) string {
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":`+args+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok && strings.HasPrefix(sc.Text(), "{") {
			line, ok = sc.Text(), true // a plain JSON answer
		}
		if !ok {
			continue
		}
		if strings.Contains(line, `"method":"elicitation/create"`) {
			id := line[strings.Index(line, `"id":`)+5:]
			id = id[:strings.IndexAny(id, ",}")]
			c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":%q}}}`, id, name))
			continue
		}
		if strings.Contains(line, `"id":"ask"`) {
			return line
		}
	}
	return "no answer: " + fmt.Sprint(sc.Err())
}

// With isolation: per-session, an elicitation goes to the session whose
// call caused it while another session's call is in flight to the same
// server, each session has a child of its own, and a session's child is
// stopped when the session ends. Shared, the same elicitation goes to no
// one (see TestCallContextNeverGuesses): the hub cannot tell whose it is.
func TestIsolationPerSession(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	for _, isolation := range []string{"per-session", "shared"} {
		t.Run(isolation, func(t *testing.T) {
			face, mgr, base := isolationHub(t, isolation)
			a, b := newElicitingClient(t, base), newElicitingClient(t, base)
			pid := func(c *httpClient, id int) string {
				_, body := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__pid","arguments":{}}}`, id))
				i := strings.Index(body, `"text":"`)
				if i < 0 {
					t.Fatalf("pid: %s", body)
				}
				return body[i+8 : i+8+strings.Index(body[i+8:], `"`)]
			}
			pidA, pidB := pid(a, 1), pid(b, 2)
			if isolation == "per-session" && (pidA == pidB || pid(a, 3) != pidA) {
				t.Errorf("sessions' children: a %s (then %s), b %s", pidA, pid(a, 3), pidB)
			}
			if isolation == "shared" && pidA != pidB {
				t.Errorf("shared: a %s, b %s", pidA, pidB)
			}

			// b's call lasts until its gate opens, after a's elicitation.
			gate := filepath.Join(t.TempDir(), "gate")
			slept := make(chan string, 1)
			go func() {
				_, body := b.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q}}}`, gate))
				slept <- body
			}()
			await.For(t, 5*time.Second, "b's call in flight", func() bool {
				hs := face.sessions.lookup(b.session)
				return hs != nil && hs.Answering() > 0
			})
			if isolation == "shared" {
				// At the upstream, too: a's elicitation must come while
				// b's call is in flight there, or it is a's alone.
				await.For(t, 5*time.Second, "b's call at the upstream", func() bool { return fakeSleeping(t, a) > 0 })
			}
			got := askAnswering(t, a, "alice")
			switch isolation {
			case "per-session":
				if !strings.Contains(got, `alice`) {
					t.Errorf("a's elicitation with b's call in flight: %s", got)
				}
			case "shared":
				if strings.Contains(got, `alice`) || !strings.Contains(got, "several clients") {
					t.Errorf("shared: the elicitation was passed on or not refused clearly: %s", got)
				}
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if body := <-slept; !strings.Contains(body, "slept 0") {
				t.Errorf("b's call: %s", body)
			}
			if isolation == "shared" {
				return
			}
			if n := mgr.Servers()[0].Isolated(); n != 2 {
				t.Errorf("%d isolated connections, want 2", n)
			}
			req, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
			req.Header.Set(headerSessionID, a.session)
			if resp, err := testClient.Do(req); err == nil {
				resp.Body.Close()
			}
			await.For(t, 10*time.Second, "a's child to stop", func() bool { return mgr.Servers()[0].Isolated() == 1 && !processAlive(pidA) })
		})
	}
}

// processAlive reports whether the process pid still runs (a zombie
// counts as gone).
func processAlive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}
