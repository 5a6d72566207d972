package upstream

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A server slower to answer initialize than its connect_timeout (250ms),
// as node on a busy laptop, comes up: each try that timed out gives the
// next twice as long, and the error says how long. Once it is up it is
// back to 250ms: after a crash the first try is cut off at 250ms again.
// The fake answers initialize only once the test opens its gate, after
// the tries it checks have timed out: however loaded the machine, they
// time out, and a slow start after it cannot use up the tries.
func TestSlowServerGetsLongerConnects(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	cfg := fakeConfig(t, "connect_timeout: 250ms, retry: {attempts: 20, initial_interval: 10ms, reconnect_interval: 100ms}", "-gate", gate)
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	for _, want := range []string{"within 250ms (connect timeout); the next try waits 500ms", "within 500ms (connect timeout); the next try waits 1s"} {
		await.For(t, 10*time.Second, "a try to time out: "+want, func() bool {
			_, ok := logs.find(want)
			return ok
		})
	}
	open := func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	open()
	await.For(t, 10*time.Second, "the slow server to come up", func() bool { return s.Status().State == StateReady })
	if err := os.Remove(gate); err != nil { // the next start is slow again
		t.Fatal(err)
	}
	logs.mu.Lock()
	logs.recs = nil
	logs.mu.Unlock()
	s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "crash"}, 10*time.Second)
	await.For(t, 10*time.Second, "the first try after the crash to time out", func() bool {
		_, ok := logs.find("within 250ms (connect timeout); the next try waits 500ms")
		return ok
	})
	open()
	await.For(t, 10*time.Second, "the slow server to come up again", func() bool { return s.Status().State == StateReady })
}
