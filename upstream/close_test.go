package upstream

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Close returns only when everything the manager started has ended: the
// servers' loops, refreshes, log level requests, notifications, the
// connections of isolated owners and their release, requests from servers
// still waiting for the client, and the servers a reload retired.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := fakeConfig(t, fastRetry+", stop_grace: 1s, call_timeout: 30s", "-flood")
	cfg.Groups[0].Servers[0].Isolation = config.IsolationPerSession
	m := New(cfg, testLogger(t))
	m.routeWait = 50 * time.Millisecond
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(t.Context())
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })

	m.SetLogLevel(mcp.LoggingLevelWarning)
	m.Notify("notifications/roots/list_changed", nil)
	for _, owner := range []testOwner{"a", "b"} {
		if _, err := s.Request(t.Context(), owner, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": owner}}, 10*time.Second); err != nil {
			t.Fatalf("owner %s: %v", owner, err)
		}
	}
	m.Release(testOwner("b"))
	callTool(t, s, "mutate", "", 0)          // a refresh of the lists
	callTool(t, s, "flood", "roots/list", 3) // requests the client never answers
	if _, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "hang"}, 20*time.Millisecond); err == nil {
		t.Error("hang answered")
	}
	m.Apply(fakeConfig(t, fastRetry+", stop_grace: 1s", "-flood", "-name", "b")) // g retired, its successor started
	await.For(t, 10*time.Second, "the successor", func() bool { return m.Servers()[0].Status().State == StateReady })

	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s", time.Since(start))
	goleak.VerifyNone(t, before)
}
