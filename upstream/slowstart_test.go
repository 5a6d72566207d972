package upstream

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A server slower to answer initialize (600ms) than its connect_timeout
// (250ms), as node on a busy laptop, comes up: each try that timed out
// gives the next twice as long, and the error says how long. Once it is
// up it is back to 250ms: after a crash the first try is cut off at 250ms
// again. The tries the test checks are those shorter than the delay:
// they time out however loaded the machine is.
func TestSlowServerGetsLongerConnects(t *testing.T) {
	cfg := fakeConfig(t, "connect_timeout: 250ms, retry: {attempts: 10, initial_interval: 10ms, reconnect_interval: 100ms}", "-delay", "600ms")
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	waitFor(t, 10*time.Second, "the slow server to come up", func() bool { return s.Status().State == StateReady })
	for _, want := range []string{"within 250ms (connect timeout); the next try waits 500ms", "within 500ms (connect timeout); the next try waits 1s"} {
		if _, ok := logs.find(want); !ok {
			t.Errorf("no error %q logged", want)
		}
	}
	logs.mu.Lock()
	logs.recs = nil
	logs.mu.Unlock()
	s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "crash"}, 10*time.Second)
	waitFor(t, 10*time.Second, "the first try after the crash to time out", func() bool {
		_, ok := logs.find("within 250ms (connect timeout); the next try waits 500ms")
		return ok
	})
	waitFor(t, 10*time.Second, "the slow server to come up again", func() bool { return s.Status().State == StateReady })
}
