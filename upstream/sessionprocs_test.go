package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// testClock is a Manager's clock that moves only when the test says.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *testClock) String() string { return c.now().Format(time.TimeOnly) }
func callPID(t *testing.T, s *Server, owner testOwner) (string, error) {
	t.Helper()
	res, err := s.Request(t.Context(), owner, "tools/call", map[string]any{"name": "pid"}, 10*time.Second)
	return string(res), err
}

// startClocked is startFake with the manager on a test clock, and every
// server of cfg ready.
func startClocked(t *testing.T, cfg *config.Config) (*Manager, *testClock) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	m := New(cfg, testLogger(t))
	clock := newTestClock()
	m.now = clock.now
	m.routeWait = 50 * time.Millisecond
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	t.Cleanup(func() {
		m.Close()
		goleak.VerifyNone(t, before)
	})
	for _, s := range m.Servers() {
		await.For(t, 10*time.Second, s.Config.ID()+" to be ready", func() bool { return s.Status().State == StateReady })
	}
	return m, clock
}

// perSessionConfig is a config of n servers with isolation: per-session,
// each a fake upstream in a group of its own.
func perSessionConfig(t *testing.T, settings string, n int, args ...string) *config.Config {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n", t.TempDir(), settings)
	for i := range n {
		yaml += fmt.Sprintf("  g%d:\n    description: fake\n    command: %q\n    args: [%s]\n    isolation: per-session\n", i, fakeBin, strings.Join(quoted, ", "))
	}
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// settings.max_session_processes caps the owners' connections of all
// servers together, not each server's: with a cap of 3 and two servers,
// a fourth owner's call is refused with the reason, whichever server it
// calls, and it gets its connection once another owner's is gone.
func TestSessionProcessesCappedAcrossServers(t *testing.T) {
	cfg := perSessionConfig(t, "stop_grace: 1s, max_session_processes: 3", 2)
	m, _ := startClocked(t, cfg)
	one, two := m.Servers()[0], m.Servers()[1]
	for _, c := range []struct {
		s     *Server
		owner testOwner
	}{{one, "a"}, {one, "b"}, {two, "c"}} {
		if _, err := callPID(t, c.s, c.owner); err != nil {
			t.Fatalf("%s on %s: %v", c.owner, c.s.Config.ID(), err)
		}
	}
	if n := m.SessionProcesses(); n != 3 {
		t.Errorf("%d session processes, want 3", n)
	}
	for _, s := range []*Server{one, two} {
		if _, err := callPID(t, s, "d"); err == nil || !strings.Contains(err.Error(), "settings.max_session_processes allows 3") || !strings.Contains(err.Error(), s.Config.ID()) {
			t.Errorf("a fourth owner on %s, over the hub's cap of 3: %v", s.Config.ID(), err)
		}
	}
	if one.Isolated()+two.Isolated() != 3 {
		t.Errorf("%d+%d connections after refusals, want 3", one.Isolated(), two.Isolated())
	}
	m.Release(testOwner("a"))
	await.For(t, 10*time.Second, "a's process to end", func() bool { return m.SessionProcesses() == 2 })
	if _, err := callPID(t, two, "d"); err != nil {
		t.Errorf("d once a is gone: %v", err)
	}
}

// A server whose own connections for owners fail at start is not started
// again at every call: a failure holds every owner's next dial back for
// the retry schedule's wait (1s, then 2s, with 25% jitter), and the calls
// meanwhile are answered with the start error at once.
func TestSessionProcessStartBacksOff(t *testing.T) {
	count := filepath.Join(t.TempDir(), "starts")
	cfg := perSessionConfig(t, "stop_grace: 1s, retry: {attempts: 5, initial_interval: 1s, reconnect_interval: 30s}", 1, "-count-file", count, "-fail-after", "1")
	m, clock := startClocked(t, cfg)
	s := m.Servers()[0]
	starts := func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(string(b))
		return n - 1 // the shared connection's
	}
	try := func(owners ...testOwner) {
		t.Helper()
		for _, o := range owners {
			_, err := callPID(t, s, o)
			if err == nil || !strings.Contains(err.Error(), "connect for this client session") {
				t.Fatalf("%s's call at %s: %v", o, clock, err)
			}
		}
	}
	try("a")
	try("a", "b", "c", "a", "b", "c", "a", "b", "c")
	if n := starts(); n != 1 {
		t.Errorf("%d starts for ten calls within the first wait, want 1", n)
	}
	if _, err := callPID(t, s, "b"); err == nil || !strings.Contains(err.Error(), "at the earliest") {
		t.Errorf("a call while backing off: %v", err)
	}
	clock.add(1300 * time.Millisecond) // past 1s+25%
	try("b", "c", "a")
	if n := starts(); n != 2 {
		t.Errorf("%d starts once the first wait passed, want 2", n)
	}
	clock.add(1400 * time.Millisecond) // within 2s-25%
	try("b", "c", "a")
	if n := starts(); n != 2 {
		t.Errorf("%d starts within the second wait, want 2", n)
	}
	clock.add(1200 * time.Millisecond) // past 2s+25%
	try("c")
	if n := starts(); n != 3 {
		t.Errorf("%d starts once the second wait passed, want 3", n)
	}
	if m.SessionProcesses() != 0 || s.Isolated() != 0 {
		t.Errorf("%d slots, %d connections held by failed starts", m.SessionProcesses(), s.Isolated())
	}
}

// An owner's connection that timed out at start gives the next owner's a
// longer connect timeout, as the shared connection's tries do (see
// TestSlowServerGetsLongerConnects). The fake's first start (the shared
// connection) answers; the owners' never do. The shared connection starts
// with a connect timeout a loaded machine does not run out of (a second
// start would never answer), the owners' get 100ms once it is up.
func TestSessionProcessGetsLongerConnects(t *testing.T) {
	count := filepath.Join(t.TempDir(), "starts")
	never := filepath.Join(t.TempDir(), "never")
	cfg := perSessionConfig(t, "connect_timeout: 1m, stop_grace: 1s, retry: {attempts: 5, initial_interval: 1s, reconnect_interval: 30s}", 1,
		"-count-file", count, "-gate", never, "-gate-after", "1")
	m, clock := startClocked(t, cfg)
	s := m.Servers()[0]
	s.mu.Lock() // the owners' dials read it under s.mu
	s.settings.ConnectTimeout = 100 * time.Millisecond
	s.mu.Unlock()
	for _, want := range []string{"within 100ms (connect timeout); the next try waits 200ms", "within 200ms (connect timeout); the next try waits 400ms"} {
		if _, err := callPID(t, s, "a"); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("call at %s: %v, want %q", clock, err, want)
		}
		clock.add(30 * time.Second) // past the backoff
	}
}

// An owner's connection with no request on it for
// settings.session_process_idle is closed, the owner lives on, and its
// next call starts a new one; a connection with a call in flight is kept
// however long the call takes.
func TestIdleSessionProcessReleased(t *testing.T) {
	cfg := perSessionConfig(t, "stop_grace: 1s, session_process_idle: 5m", 1)
	m, clock := startClocked(t, cfg)
	s := m.Servers()[0]
	a, err := callPID(t, s, "a")
	if err != nil {
		t.Fatal(err)
	}
	// b's call lasts until its gate opens, once a's connection is released.
	gate := filepath.Join(t.TempDir(), "gate")
	hung := make(chan error, 1)
	go func() {
		_, err := s.Request(context.Background(), testOwner("b"), "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"gate": gate}}, time.Minute)
		hung <- err
	}()
	await.For(t, 10*time.Second, "b's connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		b := s.isolated[testOwner("b")]
		return b != nil && b.c != nil
	})
	clock.add(4 * time.Minute)
	m.releaseIdle()
	if n := s.Isolated(); n != 2 {
		t.Errorf("%d connections after 4 idle minutes, want 2", n)
	}
	clock.add(2 * time.Minute)
	m.releaseIdle()
	if n := s.Isolated(); n != 1 {
		t.Errorf("%d connections after 6 minutes (a idle, b in a call), want 1", n)
	}
	await.For(t, 10*time.Second, "a's process to end", func() bool { return m.SessionProcesses() == 1 })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-hung; err != nil {
		t.Errorf("b's call while a's connection was released: %v", err)
	}
	again, err := callPID(t, s, "a")
	if err != nil || again == a {
		t.Errorf("a's call after its connection was released: %s %v (before %s)", again, err, a)
	}
}

// clientOwner is an owner of a client, as an HTTP session of a named
// credential is.
type clientOwner struct{ name, client string }

func (o *clientOwner) Client() string    { return o.client }
func (o *clientOwner) UserKey() string   { return "" }
func (o *clientOwner) SessionID() string { return "" }
func (o *clientOwner) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// A client holds at most its share (http.client_share, half by default)
// of settings.max_session_processes and of each server's own cap: past it
// its next session's call is refused with the reason, another client's
// sessions still get theirs, and owners of no client are bounded by the
// caps alone.
func TestSessionProcessesClientShare(t *testing.T) {
	defer func(n int) { maxIsolated = n }(maxIsolated)
	maxIsolated = 4
	cfg := perSessionConfig(t, "stop_grace: 1s, max_session_processes: 6", 2)
	m, _ := startClocked(t, cfg)
	one, two := m.Servers()[0], m.Servers()[1]
	call := func(s *Server, o *clientOwner) error {
		_, err := s.Request(t.Context(), o, "tools/call", map[string]any{"name": "pid"}, 10*time.Second)
		return err
	}
	a1, a2, a3, a4 := &clientOwner{"a1", "A"}, &clientOwner{"a2", "A"}, &clientOwner{"a3", "A"}, &clientOwner{"a4", "A"}
	b1, b2 := &clientOwner{"b1", "B"}, &clientOwner{"b2", "B"}
	for _, o := range []*clientOwner{a1, a2} {
		if err := call(one, o); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
	}
	// A holds 2 of one's 4: its share of the server's cap.
	if err := call(one, a3); err == nil || !strings.Contains(err.Error(), "its share (2 of 4, http.client_share)") {
		t.Errorf("A's third session on one server of cap 4: %v", err)
	}
	if err := call(two, a3); err != nil {
		t.Errorf("A's third session on the other server: %v", err)
	}
	// A holds 3 of the hub's 6: its share of max_session_processes.
	if err := call(two, a4); err == nil || !strings.Contains(err.Error(), "its share of settings.max_session_processes (3 of 6") {
		t.Errorf("A's fourth session, past its share of the hub's cap: %v", err)
	}
	for _, c := range []struct {
		s *Server
		o *clientOwner
	}{{one, b1}, {one, b2}, {two, b1}} {
		if err := call(c.s, c.o); err != nil {
			t.Errorf("B's %s on %s while A holds its share: %v", c.o.name, c.s.Config.ID(), err)
		}
	}
	if n := m.SessionProcesses(); n != 6 {
		t.Errorf("%d session processes, want 6", n)
	}
	m.Release(a1)
	await.For(t, 10*time.Second, "a1's process to end", func() bool { return m.SessionProcesses() == 5 })
	if err := call(two, a4); err != nil {
		t.Errorf("A's fourth session once one of its others is gone: %v", err)
	}
}
