package server

import (
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A log message a server sends on one session's own connection
// (isolation: per-session) reaches that session alone; one on the shared
// connection of a server without isolation reaches every session.
func TestLogOfOwnConnectionReachesItsSessionAlone(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	for _, tc := range []struct {
		isolation string
		otherSees bool
	}{{"per-session", false}, {"shared", true}} {
		t.Run(tc.isolation, func(t *testing.T) {
			a, b := twoSessions(t, tc.isolation, "f__log")
			for _, c := range []*pipeClient{a, b} {
				c.send(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`)
				c.answer(`"lvl"`)
			}
			a.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__log","arguments":{"text":"secret of a"}}}`)
			if all := a.answerAll("1"); !strings.Contains(all, "secret of a") {
				t.Fatalf("a did not get its own log message:\n%s", all)
			}
			// b's own call, answered after anything sent to it before.
			b.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__log","arguments":{"text":"of b"}}}`)
			all := b.answerAll("2")
			if got := strings.Contains(all, "secret of a"); got != tc.otherSees {
				t.Errorf("b got a's log message: %v, want %v:\n%s", got, tc.otherSees, all)
			}
		})
	}
}

// A resource update a server sends on one session's own connection
// (isolation: per-session) reaches that session alone, however many are
// subscribed to the URI; one on the shared connection of a server without
// isolation reaches every session subscribed.
func TestUpdateOfOwnConnectionReachesItsSessionAlone(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	for _, tc := range []struct {
		isolation string
		otherSees bool
	}{{"per-session", false}, {"shared", true}} {
		t.Run(tc.isolation, func(t *testing.T) {
			a, b := twoSessions(t, tc.isolation, "f__touch")
			for _, c := range []*pipeClient{a, b} {
				c.send(`{"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{"uri":"fake://fake/res/3"}}`)
				if got := c.answer(`"sub"`); !strings.Contains(got, `"result":{}`) {
					t.Fatalf("subscribe: %s", got)
				}
			}
			const updated = `"notifications/resources/updated","params":{"uri":"fake://fake/res/3"}`
			a.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"fake://fake/res/3"}}}`)
			all := a.answerAll("1")
			a.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // the update is sent before the answer: read either way
			if all += a.answerAll("2"); !strings.Contains(all, updated) {
				t.Errorf("a did not get the update of its own call:\n%s", all)
			}
			// b's own call, answered after anything sent to it before.
			b.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"fake://fake/other"}}}`)
			all = b.answerAll("3")
			if got := strings.Contains(all, updated); got != tc.otherSees {
				t.Errorf("b got the update of a's call: %v, want %v:\n%s", got, tc.otherSees, all)
			}
		})
	}
}

// twoSessions are sessions a and b, initialized, of a hub serving the fake
// with isolation, once its tool is in the view.
func twoSessions(t *testing.T, isolation, tool string) (a, b *pipeClient) {
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    isolation: "+isolation+"\n"), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes[tool]; return ok })
	a, b = servePipes(t, h, StdioOptions{SessionID: "a"}), servePipes(t, h, StdioOptions{SessionID: "b"})
	for _, c := range []*pipeClient{a, b} {
		c.initialize()
	}
	return a, b
}
