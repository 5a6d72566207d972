package upstream

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// One client session that holds its share of questions open (the hub does
// not answer them) leaves the server's other slots to the rest: its
// further questions are refused at once, and another session's question
// on the same server still reaches the hub.
func TestOutstandingSharedBetweenOwners(t *testing.T) {
	cfg := fakeConfig(t, "call_timeout: 20s, stop_grace: 1s", "-flood")
	cfg.Groups[0].Servers[0].Isolation = config.IsolationPerSession
	m, s := startFake(t, cfg)
	c := collect(t, m)
	of := func(owner testOwner) int {
		return len(slices.DeleteFunc(c.list(), func(e Event) bool { return e.Kind != EventRequest || e.Owner != owner }))
	}
	const n = 100
	flood := func(owner testOwner, n int) {
		t.Helper()
		if _, err := s.Request(t.Context(), owner, "tools/call",
			map[string]any{"name": "flood", "arguments": map[string]any{"text": "roots/list", "ms": n}}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	flood("a", n)
	await.For(t, 5*time.Second, "a's share", func() bool { return of("a") == maxOutstandingPerOwner })
	flood("b", 1)
	await.For(t, 5*time.Second, "b's question", func() bool { return of("b") == 1 })
	// a's questions beyond its share were refused, not queued: they
	// never reach the hub, however long it waits for them.
	flood("a", 1)
	var st fakeState
	await.For(t, 5*time.Second, "a's refusals", func() bool {
		res, err := s.Request(t.Context(), testOwner("a"), "tools/call", map[string]any{"name": "state"}, 10*time.Second)
		var r struct{ Content []struct{ Text string } }
		if err != nil || json.Unmarshal(res, &r) != nil || len(r.Content) == 0 || json.Unmarshal([]byte(r.Content[0].Text), &st) != nil {
			return false
		}
		return st.Refusals == n+1-maxOutstandingPerOwner
	})
	if got := of("a"); got != maxOutstandingPerOwner {
		t.Errorf("%d of a's questions reached the hub, want %d", got, maxOutstandingPerOwner)
	}
	for _, e := range c.list() {
		e.Reply(json.RawMessage(`{"roots":[]}`), nil)
	}
}
