package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Progress for a call reaches its client from the server the call went
// to only: another upstream that sends progress with the hub's token (the
// tokens are counted, so guessed) cannot put its words into a call of
// another server's, perhaps another client's.
func TestAttackProgressFromAnotherUpstreamDropped(t *testing.T) {
	t.Parallel()
	yaml := flatFakeYAML(t.TempDir(), "call_timeout: 10s", "") +
		fmt.Sprintf("  g:\n    description: other\n    command: %q\n    args: [\"-name\", \"g\"]\n", fakeBin)
	h, mgr := runHub(t, yaml, true)
	servers := map[string]*upstream.Server{}
	for _, s := range mgr.Servers() {
		servers[s.Config.Group] = s
	}
	await.For(t, 10*time.Second, "the upstreams", func() bool {
		return servers["f"].Status().State == upstream.StateReady && servers["g"].Status().State == upstream.StateReady
	})
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__sleep"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	// The call lasts until its gate opens, once the progress is sent.
	gate := filepath.Join(t.TempDir(), "gate")
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q},"_meta":{"progressToken":"mine"}}}`, gate))
	var tok string
	await.For(t, 5*time.Second, "the call's progress token", func() bool {
		for k := range h.routes.Progress() {
			tok = k
		}
		return tok != ""
	})
	progress := func(message string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"progressToken":%q,"progress":1,"message":%q}`, tok, message))
	}
	h.routes.Notification(upstream.Event{Context: context.Background(), Server: servers["g"], Method: "notifications/progress", Params: progress("spoofed by g")})
	h.routes.Notification(upstream.Event{Context: context.Background(), Server: servers["f"], Method: "notifications/progress", Params: progress("from f")})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all := c.answerAll("1")
	if strings.Contains(all, "spoofed by g") {
		t.Errorf("another upstream's progress reached the call:\n%s", all)
	}
	if !strings.Contains(all, "from f") || !strings.Contains(all, `"progressToken":"mine"`) {
		t.Errorf("the call's own server's progress did not reach it:\n%s", all)
	}
}

// Progress that comes on one session's own connection to a server
// (isolation: per-session), or in the answer to its call, is not another
// session's call's, though both calls went to that server.
func TestAttackProgressFromAnotherSessionsConnectionDropped(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	f := h.mgr.Servers()[0]
	a := servePipes(t, h, StdioOptions{})
	a.initialize()
	// The call lasts until its gate opens, once the progress is sent.
	gate := filepath.Join(t.TempDir(), "gate")
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q},"_meta":{"progressToken":"mine"}}}`, gate))
	var tok string
	var sessA client
	await.For(t, 5*time.Second, "the call's progress token", func() bool {
		for k, s := range h.routes.Progress() {
			tok, sessA = k, s
		}
		return tok != ""
	})
	sessB := newSession("b", "streamable-http") // another client, of the HTTP face
	progress := func(message string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"progressToken":%q,"progress":1,"message":%q}`, tok, message))
	}
	h.routes.Notification(upstream.Event{Context: context.Background(), Server: f, Method: "notifications/progress", Params: progress("from b's connection"), Owner: sessB, OwnConn: true})
	h.routes.Notification(upstream.Event{Context: context.Background(), Server: f, Method: "notifications/progress", Params: progress("from a's connection"), Owner: sessA, OwnConn: true})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all := a.answerAll("1")
	if strings.Contains(all, "from b's connection") {
		t.Errorf("progress from another session's connection reached the call:\n%s", all)
	}
	if !strings.Contains(all, "from a's connection") {
		t.Errorf("the call's own progress did not reach it:\n%s", all)
	}
}
