package upstream

import (
	"errors"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// Each connection has its ConnID: RequestOn returns the one it sent on,
// a notification carries the one it came on, a restart makes a new one,
// and a request held to the old one fails with ErrConnGone instead of
// going to the new process.
func TestConnIDNamesTheConnection(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "call_timeout: 10s"))
	_, first, err := s.RequestOn(t.Context(), nil, 0, 0, "tools/call", map[string]any{"name": "log", "arguments": map[string]any{"text": "hi"}}, 10*time.Second)
	if err != nil || first == 0 {
		t.Fatalf("first call: conn %d, %v", first, err)
	}
	select {
	case e := <-m.Events():
		if e.Method != "notifications/message" || ConnOf(e.Context) != first {
			t.Errorf("event %s on conn %d, want notifications/message on %d", e.Method, ConnOf(e.Context), first)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no log message event")
	}
	s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "crash"}, 10*time.Second)
	await.For(t, 20*time.Second, "the restart", func() bool { return s.Restarts() >= 1 && s.Status().State == StateReady })
	if _, conn, err := s.RequestOn(t.Context(), nil, first, 0, "ping", nil, 10*time.Second); !errors.Is(err, ErrConnGone) || conn != 0 {
		t.Errorf("a request held to the connection that ended: %v on %d, want ErrConnGone on none", err, conn)
	}
	_, second, err := s.RequestOn(t.Context(), nil, 0, 0, "ping", nil, 10*time.Second)
	if err != nil || second == 0 || second == first {
		t.Errorf("after the restart: conn %d (before %d), %v", second, first, err)
	}
	if _, _, err := s.RequestOn(t.Context(), nil, second, 0, "ping", nil, 10*time.Second); err != nil {
		t.Errorf("held to the live connection: %v", err)
	}
}
