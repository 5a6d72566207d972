package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// coldWait is the startup_wait of the cold-start tests: far longer than a
// list from the cache may take, so that a list answered before it is not
// one that gave up waiting.
const coldWait = 30 * time.Second

// coldHub starts a flat hub in front of the fake "f" (with its grow tool)
// that answers initialize once the file gate exists, its state in dir,
// startup_wait wait, and more args for the fake; stop closes it.
func coldHub(t *testing.T, dir, gate string, wait time.Duration, args ...string) (*Hub, *upstream.Manager, func()) {
	t.Helper()
	return startHub(t, coldYAML(dir, gate, wait, args...), true)
}

// coldYAML is the config of coldHub.
func coldYAML(dir, gate string, wait time.Duration, args ...string) string {
	extra := ""
	for _, a := range args {
		extra += fmt.Sprintf(", %q", a)
	}
	return flatFakeYAML(dir, "startup_wait: "+wait.String()+", call_timeout: 30s", "    args: [\"-grow\", "+gated(gate)+extra+"]\n")
}

// warmUp runs the hub of coldHub once to its end with the gate open, so
// that its state dir holds the pins and the tools of a last run; with grow
// the fake's list grew (the sprout tool) before it ended. The gate is
// closed again: the next hub's fake waits for it.
func warmUp(t *testing.T, dir, gate string, grow bool) {
	t.Helper()
	openGate(t, gate)
	h, mgr, stop := coldHub(t, dir, gate, coldWait)
	s := mgr.Servers()[0]
	await.For(t, 10*time.Second, "the upstream", func() bool { return s.Status().State == upstream.StateReady })
	if grow {
		if _, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "grow"}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		await.For(t, 10*time.Second, "the grown list", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__sprout"]; return ok })
	}
	stop() // waits for the upstream's last tools to be kept
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
}

// firstList starts a client of h and returns the answer to its first
// tools/list, sent right after initialize, and how long it took.
func firstList(t *testing.T, h *Hub) (*pipeClient, string, time.Duration) {
	t.Helper()
	c := servePipes(t, h, StdioOptions{})
	start := time.Now()
	c.send(initializeMsg)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := c.answer("1")
	return c, list, time.Since(start)
}

// A flat hub started again lists the tools its upstream listed the last
// time at once, while that upstream is still starting (its initialize
// waits for the gate); a call to one of them waits for the upstream and
// succeeds; once the upstream is ready, a client that got the cached list
// is told the list changed when the live one differs, and not when it is
// the same.
func TestColdStartListsLastTools(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{false, true} {
		t.Run(fmt.Sprintf("changed=%v", changed), func(t *testing.T) {
			dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			warmUp(t, dir, gate, changed)
			h, mgr, _ := coldHub(t, dir, gate, coldWait)
			c, list, took := firstList(t, h)
			if st := mgr.Servers()[0].Status().State; st != upstream.StateStarting {
				t.Fatalf("the upstream is %s before its gate opened", st)
			}
			t.Logf("first tools/list after %v, the upstream still starting", took)
			if took > coldWait/2 || !strings.Contains(list, `"name":"f__echo"`) || strings.Contains(list, `"name":"f__sprout"`) != changed {
				t.Fatalf("first tools/list after %v: %.400s", took, list)
			}
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hello"}}}`)
			// The list_changed of the cache's arrival (told to no one: the
			// client was answered from it) is over before the gate opens.
			await.For(t, 10*time.Second, "the cache's list_changed window", func() bool { return !h.listens.Pending(listen.Tools) })
			openGate(t, gate)
			lines := c.answerAll("2")
			if call := lines[strings.LastIndex(lines[:len(lines)-1], "\n")+1:]; !strings.Contains(call, `"text":"hello"`) || strings.Contains(call, `"isError":true`) {
				t.Fatalf("cached tool's call: %.300s", call)
			}
			await.For(t, 10*time.Second, "the live view", func() bool { return !h.snapshot().view.Starting })
			const told = `"method":"notifications/tools/list_changed"`
			if changed {
				if !strings.Contains(lines, told) {
					c.readUntil(func(line string) bool { return strings.Contains(line, told) })
				}
				c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
				if live := c.answer("3"); strings.Contains(live, `"name":"f__sprout"`) || !strings.Contains(live, `"name":"f__grow"`) {
					t.Errorf("live tools/list: %.400s", live)
				}
				return
			}
			// A view on the way to the live one may open a window; once it
			// is over, anything it told the client comes before the answer
			// to a request sent after it.
			await.For(t, 30*time.Second, "the live view's list_changed window", func() bool {
				h.swapMu.Lock()
				defer h.swapMu.Unlock()
				return !h.listens.Pending(listen.Tools)
			})
			c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			after := c.answerAll("3")
			if strings.Contains(lines+after, told) {
				t.Errorf("told the list changed when the live list is the cached one: %s%s", lines, after)
			}
			if live := after[strings.LastIndex(after[:len(after)-1], "\n")+1:]; strings.Replace(live, `"id":3,`, `"id":1,`, 1) != list {
				t.Errorf("live tools/list differs from the cached one:\n%.400s\n%.400s", live, list)
			}
		})
	}
}

// A cached tool whose definition no longer matches its pin (a new one was
// accepted since it was cached) is not listed from the cache, as a live
// change would not be; the server's other cached tools are.
func TestColdStartHidesToolWhosePinChanged(t *testing.T) {
	t.Parallel()
	dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	warmUp(t, dir, gate, false)
	pins := upstream.NewPins(filepath.Join(dir, "pins"))
	other := []upstream.Item{{Key: "echo", Raw: json.RawMessage(`{"name":"echo","description":"Echo, as accepted since"}`)}}
	if _, err := pins.Check("f", other); err != nil {
		t.Fatal(err)
	}
	if _, err := pins.Accept("f", "echo"); err != nil {
		t.Fatal(err)
	}
	h, mgr, _ := coldHub(t, dir, gate, coldWait)
	_, list, took := firstList(t, h)
	if st := mgr.Servers()[0].Status().State; st != upstream.StateStarting {
		t.Fatalf("the upstream is %s before its gate opened", st)
	}
	if took > coldWait/2 || strings.Contains(list, `"name":"f__echo"`) || !strings.Contains(list, `"name":"f__sleep"`) {
		t.Errorf("first tools/list after %v: %.400s", took, list)
	}
}

// A server never seen before, or seen with another config, is waited for
// up to startup_wait from the hub's start (by the handshake, and the
// first list no longer): no list of another server is shown.
func TestColdStartFirstEverWaits(t *testing.T) {
	t.Parallel()
	const wait = 500 * time.Millisecond
	for _, tc := range []struct {
		name  string
		warm  bool
		extra []string
	}{
		{"never seen", false, nil},
		{"args changed", true, []string{"-page", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			if tc.warm {
				warmUp(t, dir, gate, false)
			}
			h, _, _ := coldHub(t, dir, gate, wait, tc.extra...)
			_, list, _ := firstList(t, h)
			if since := time.Since(h.started); since < wait || strings.Contains(list, `"name":"f__`) {
				t.Errorf("first tools/list %v after the hub's start (startup_wait %v): %.300s", since, wait, list)
			}
		})
	}
}
