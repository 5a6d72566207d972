package upstream

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// With isolation: per-session each owner's requests go to a child of its
// own; owners beyond the cap are refused with a reason, a released
// owner's child stops and frees its place, a crashed one is dialled again,
// and requests without an owner use the shared connection.
func TestIsolatedConnections(t *testing.T) {
	defer func(n int) { maxIsolated = n }(maxIsolated)
	maxIsolated = 2
	cfg := fakeConfig(t, "stop_grace: 1s")
	cfg.Groups[0].Servers[0].Isolation = config.IsolationPerSession
	m, s := startFake(t, cfg)
	shared := pidOf(t, s)
	pid := func(owner testOwner) (string, error) {
		res, err := s.Request(t.Context(), owner, "tools/call", map[string]any{"name": "pid"}, 10*time.Second)
		return string(res), err
	}
	a, err := pid("a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pid("b")
	if a == b || strings.Contains(a, `"`+strconv.Itoa(shared)+`"`) {
		t.Errorf("a %s, b %s, shared %d", a, b, shared)
	}
	if again, _ := pid("a"); again != a {
		t.Errorf("a's second call went to %s, its first to %s", again, a)
	}
	if _, err := pid("c"); err == nil || !strings.Contains(err.Error(), "allows 2 at once") {
		t.Errorf("a third owner over the cap of 2: %v", err)
	}
	m.Release(testOwner("a"))
	await.For(t, 10*time.Second, "a's connection to close", func() bool { return s.Isolated() == 1 })
	if c, err := pid("c"); err != nil || c == a || c == b {
		t.Errorf("c once a is released: %s %v", c, err)
	}
	// b's child crashes: its next call gets a new one.
	if _, err := s.Request(t.Context(), testOwner("b"), "tools/call", map[string]any{"name": "crash"}, 5*time.Second); err == nil {
		t.Error("crash answered")
	}
	await.For(t, 10*time.Second, "b's new child", func() bool {
		nb, err := pid("b")
		return err == nil && nb != b
	})
	if got := pidOf(t, s); got != shared {
		t.Errorf("requests without an owner went to %d, not the shared child %d", got, shared)
	}
}

// A request of no owner goes on the shared connection, even while an
// owner's call is in flight (a subscription every session shares).
func TestNoOwnerUsesTheSharedConnection(t *testing.T) {
	cfg := fakeConfig(t, "stop_grace: 1s")
	cfg.Groups[0].Servers[0].Isolation = config.IsolationPerSession
	_, s := startFake(t, cfg)
	shared := pidOf(t, s)
	defer s.untrackCall(s.trackCall(&callBound{parent: t.Context()}, &conn{id: 99}, testOwner("a"), 0))
	res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "pid"}, 10*time.Second)
	if err != nil || !strings.Contains(string(res), `"`+strconv.Itoa(shared)+`"`) || s.Isolated() != 0 {
		t.Errorf("got %s %v (shared child %d), %d isolated connections", res, err, shared, s.Isolated())
	}
}
