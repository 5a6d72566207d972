package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

const fastRetry = "retry: {attempts: 2, initial_interval: 10ms, reconnect_interval: 50ms}"

func pidOf(t *testing.T, s *Server) int {
	t.Helper()
	pid, err := strconv.Atoi(callTool(t, s, "pid", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A reload keeps the servers whose configuration did not change, with
// their sessions, restarts the changed ones and stops the removed ones.
func TestApply(t *testing.T) {
	cfg := fakeConfig(t, fastRetry, "-name", "a")
	m, s := startFake(t, cfg)
	pid := pidOf(t, s)
	drain(m.Changes())

	same := fakeConfig(t, fastRetry+", call_timeout: 7s", "-name", "a")
	m.Apply(same)
	if got := m.Servers()[0]; got != s {
		t.Fatal("an unchanged server was replaced")
	}
	if got := pidOf(t, s); got != pid {
		t.Errorf("an unchanged server was restarted: pid %d, was %d", got, pid)
	}
	if got := time.Duration(s.callTimeout.Load()); got != 7*time.Second {
		t.Errorf("call timeout after reload %s, want 7s", got)
	}
	select {
	case <-m.Changes():
	default:
		t.Error("Apply signalled no change")
	}

	changed := fakeConfig(t, fastRetry, "-name", "b")
	m.Apply(changed)
	s2 := m.Servers()[0]
	if s2 == s {
		t.Fatal("a changed server was kept")
	}
	await.For(t, 10*time.Second, "the changed server", func() bool { return s2.Status().State == StateReady })
	await.For(t, 10*time.Second, "the old server to stop", func() bool { return s.Status().State == StateStopped })
	if got := s2.Status().ServerInfo.Name; got != "b" {
		t.Errorf("server name %q", got)
	}
	if _, err := s.Request(t.Context(), nil, "ping", nil, time.Second); !errors.Is(err, errUnavailable) {
		t.Errorf("request to a stopped server: %v", err)
	}

	// A second group, with a disabled server.
	two := fakeConfig(t, fastRetry, "-name", "b")
	two.Groups = append(two.Groups, &config.Group{Name: "h", Description: "off", Servers: []*config.Server{
		{Name: "h", Group: "h", Command: fakeBin, Transport: config.TransportStdio, Disabled: true, Retry: two.Groups[0].Servers[0].Retry}}})
	m.Apply(two)
	if got := len(m.Groups()); got != 2 {
		t.Fatalf("%d groups", got)
	}
	if m.Servers()[0] != s2 {
		t.Error("the kept server of group g was replaced")
	}
	h := m.Servers()[1]
	if st := h.Status(); st.State != StateDisabled || st.State.String() != "disabled" {
		t.Errorf("disabled server: %v", st.State)
	}
	if !m.Settled() {
		t.Error("not settled with one ready and one disabled server")
	}
	if _, err := h.Request(t.Context(), nil, "ping", nil, time.Second); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("request to a disabled server: %v", err)
	}
	if e1, e2 := m.Close(), m.Close(); e1 != nil || e2 != nil { // Close twice: idempotent
		t.Error("Close failed")
	}
	m.Apply(cfg) // after Close: nothing happens
	if st := s2.Status().State; st != StateStopped {
		t.Errorf("after Close: %v", st)
	}
}

// The client's log level reaches every server that logs, and those that
// connect later; the client's notifications reach them too.
func TestLogLevelAndNotify(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	if m.LogLevel() != "" {
		t.Errorf("initial log level %q", m.LogLevel())
	}
	m.SetLogLevel(mcp.LoggingLevelWarning)
	await.For(t, 5*time.Second, "the log level", func() bool { return stateOf(t, s).LogLevel == "warning" })
	m.Notify("notifications/roots/list_changed", nil)
	await.For(t, 5*time.Second, "the notification", func() bool {
		return slices.Contains(stateOf(t, s).Notified, "notifications/roots/list_changed")
	})
	// A flood of notifications to the server never blocks the caller: the
	// flood ends (the deadline only bounds a hang; a busy machine may take
	// seconds, so no time is asserted).
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for range 10_000 {
			m.Notify("notifications/roots/list_changed", nil)
		}
	}()
	select {
	case <-flooded:
	case <-time.After(time.Minute):
		t.Fatal("10,000 notifications did not end within a minute: Notify blocks")
	}
	if caps := s.Capabilities(); caps.Tools == nil || caps.Logging == nil {
		t.Errorf("capabilities %+v", caps)
	}
}

// A server that cannot start is failed, with its reason, is tried again
// on its schedule, and its calls fail at once.
func TestFailedServer(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, fastRetry, "-exit-at-start", "2")
	m := New(cfg, testLogger(t))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(t.Context())
	defer m.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*await.Slow) // bounds a hang
	defer cancel()
	m.WaitSettled(ctx)
	s := m.Servers()[0]
	st := s.Status()
	if st.State != StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), "missing API key") {
		t.Fatalf("status %v: %v", st.State, st.Err)
	}
	_, err := s.Request(t.Context(), nil, "tools/list", nil, time.Second)
	if !errors.Is(err, errUnavailable) || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("request: %v", err)
	}
	if len(s.Lists().Tools) != 0 || s.Capabilities().Tools != nil {
		t.Error("a failed server has lists")
	}
}

// Calls pass the server's errors through, and end at their timeout or
// when their caller gives up.
func TestRequestErrors(t *testing.T) {
	_, s := startFake(t, fakeConfig(t, ""))
	_, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "fail"}, 5*time.Second)
	var re *RPCError
	if !errors.As(err, &re) || re.Code != -32099 || !strings.Contains(re.Error(), "failed on purpose") {
		t.Errorf("fail: %v", err)
	}
	start := time.Now()
	_, err = s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "hang"}, 100*time.Millisecond)
	// The error says the timeout ended it; the time bounds a hang only.
	if err == nil || !strings.Contains(err.Error(), "no answer to tools/call within 100ms") || time.Since(start) > time.Minute {
		t.Errorf("hang: %v after %s", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err = s.Request(ctx, nil, "tools/call", map[string]any{"name": "hang"}, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	await.For(t, 5*time.Second, "the cancellations", func() bool {
		var st struct{ Cancelled []any }
		_ = json.Unmarshal([]byte(callTool(t, s, "state", "", 0)), &st)
		return len(st.Cancelled) == 2
	})
}

// Accepting changed pins serves the tools they withheld.
func TestRecheckPins(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	callTool(t, s, "mutate", "", 0)
	await.For(t, 5*time.Second, "echo withheld", func() bool { return slices.Contains(s.Status().PinChanged, "echo") })
	n := len(s.Lists().Tools)
	if changes, err := m.Pins().Changes(s.Config.ID()); err != nil || len(changes) != 1 || changes[0].Tool != "echo" {
		t.Fatalf("pin changes %+v, %v", changes, err)
	}
	if accepted, err := m.Pins().Accept(s.Config.ID()); err != nil || !slices.Equal(accepted, []string{"echo"}) {
		t.Fatalf("accepted %v, %v", accepted, err)
	}
	drain(m.Changes())
	m.RecheckPins()
	if got := len(s.Lists().Tools); got != n+1 {
		t.Errorf("%d tools after accepting, want %d", got, n+1)
	}
	select {
	case <-m.Changes():
	default:
		t.Error("no change signalled")
	}
}

func TestListChangedKinds(t *testing.T) {
	t.Parallel()
	for method, want := range map[string]listSet{
		"notifications/tools/list_changed":     1,
		"notifications/prompts/list_changed":   2,
		"notifications/resources/list_changed": 28, // resources, templates and skills
		"notifications/widgets/list_changed":   allLists,
	} {
		if got, ok := listChanged(method); !ok || got != want {
			t.Errorf("%s: %b, %v", method, got, ok)
		}
	}
	for _, method := range []string{"notifications/message", "notifications/progress", "list_changed"} {
		if _, ok := listChanged(method); ok {
			t.Errorf("%s taken for a list_changed", method)
		}
	}
}

func TestRawParams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{json.RawMessage("null"), ""},
		{json.RawMessage(nil), ""},
		{json.RawMessage(`{"a":1}`), `{"a":1}`},
		{map[string]any{"b": true}, `{"b":true}`},
		{func() {}, ""},
	} {
		if got := string(rawParams(c.in)); got != c.want {
			t.Errorf("rawParams(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if EventNotification.String() != "notification" || EventRequest.String() != "request" || EventKind(0).String() != "unknown" {
		t.Error("EventKind.String")
	}
}

// fetchAll reads every page and refuses servers whose lists make no sense.
func TestFetchAll(t *testing.T) {
	t.Parallel()
	pages := func(results ...string) func(context.Context, string, any) (json.RawMessage, error) {
		i := 0
		return func(context.Context, string, any) (json.RawMessage, error) {
			if i == len(results) {
				return nil, errors.New("no more pages")
			}
			i++
			return json.RawMessage(results[i-1]), nil
		}
	}
	items, err := fetchAll(t.Context(), "tools/list", "tools", "name", pages(
		`{"tools":[{"name":"a"}],"nextCursor":"1"}`, `{"tools":[{"name":"b","x":1}],"nextCursor":null}`))
	if err != nil || len(items) != 2 || items[1].Key != "b" || string(items[1].Raw) != `{"name":"b","x":1}` {
		t.Errorf("two pages: %+v, %v", items, err)
	}
	items, err = fetchAll(t.Context(), "resources/list", "resources", "uri", pages(`{"resources":[{"uri":"x://1","name":"one"}]}`))
	if err != nil || len(items) != 1 || items[0].Name != "one" || items[0].Key != "x://1" {
		t.Errorf("resource: %+v, %v", items, err)
	}
	if items, err := fetchAll(t.Context(), "tools/list", "tools", "name", pages(`{"tools":null}`)); err != nil || len(items) != 0 {
		t.Errorf("null list: %+v, %v", items, err)
	}
	for name, results := range map[string][]string{
		"repeated cursor":   {`{"tools":[],"nextCursor":"x"}`, `{"tools":[],"nextCursor":"x"}`},
		"not an object":     {`[1]`},
		"not a list":        {`{"tools":{}}`},
		"entry without key": {`{"tools":[{"title":"` + strings.Repeat("t", 200) + `"}]}`},
		"entry not object":  {`{"tools":[1]}`},
		"bad cursor":        {`{"tools":[],"nextCursor":5}`},
		"request fails":     {},
	} {
		if _, err := fetchAll(t.Context(), "tools/list", "tools", "name", pages(results...)); err == nil || !strings.HasPrefix(err.Error(), "tools/list: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
	endless := func(_ context.Context, _ string, params any) (json.RawMessage, error) {
		n := 0
		if p, ok := params.(map[string]string); ok {
			n, _ = strconv.Atoi(p["cursor"])
		}
		return json.RawMessage(`{"tools":[],"nextCursor":"` + strconv.Itoa(n+1) + `"}`), nil
	}
	if _, err := fetchAll(t.Context(), "tools/list", "tools", "name", endless); err == nil || !strings.Contains(err.Error(), "pages") {
		t.Errorf("endless: %v", err)
	}
}

// A pin file that cannot be parsed withholds every tool of its server,
// until it is removed, instead of serving tools that may have changed.
func TestCorruptPinsWithholdTools(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	n := len(s.Lists().Tools)
	if n == 0 {
		t.Fatal("the fake serves no tools")
	}
	path := m.Pins().path(s.Config.ID())
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.RecheckPins()
	if got := len(s.Lists().Tools); got != 0 || len(s.Status().PinChanged) != n {
		t.Fatalf("%d tools served, %d withheld with a corrupt pin file; want 0 and %d", got, len(s.Status().PinChanged), n)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	m.RecheckPins()
	if got := len(s.Lists().Tools); got != n {
		t.Errorf("%d tools after removing the pin file, want %d", got, n)
	}
}

// Pins that cannot be saved (a full disk) withhold the tools seen for the
// first time: the fake's tools are all withheld while the pin file cannot
// be written, and all served once it can.
func TestUnsavedPinsWithholdTools(t *testing.T) {
	t.Parallel()
	m := New(fakeConfig(t, ""), testLogger(t))
	var full atomic.Bool
	full.Store(true)
	write := m.pins.write
	m.pins.write = func(path string, v any) error {
		if full.Load() {
			return errors.New("no space left on device")
		}
		return write(path, v)
	}
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(t.Context())
	t.Cleanup(func() { m.Close() })
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })
	n := len(s.Status().PinChanged)
	if got := len(s.Lists().Tools); got != 0 || n == 0 {
		t.Fatalf("%d tools served, %d withheld with pins not saved; want 0 served", got, n)
	}
	full.Store(false)
	m.RecheckPins()
	if got := len(s.Lists().Tools); got != n || len(s.Status().PinChanged) != 0 {
		t.Errorf("%d tools served, %v withheld once the pins are saved; want %d, none", got, s.Status().PinChanged, n)
	}
}

// A pin file write that blocks (a slow or hung disk) holds up neither
// calls nor lists: the server's lock is never held across pin file I/O.
func TestPinWriteDoesNotHoldUpCalls(t *testing.T) {
	t.Parallel()
	m := New(fakeConfig(t, ""), testLogger(t))
	m.routeWait = 50 * time.Millisecond
	var block atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	write := m.pins.write
	m.pins.write = func(path string, v any) error {
		if block.Load() {
			entered <- struct{}{}
			<-release
		}
		return write(path, v)
	}
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(t.Context())
	t.Cleanup(func() { m.Close() })
	t.Cleanup(func() { close(release) }) // before Close: LIFO
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })
	tools := len(s.Lists().Tools)

	block.Store(true)
	callTool(t, s, "mutate", "", 0) // changes echo and sends list_changed: the pins record the change
	select {
	case <-entered:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the refresh wrote no pins")
	}
	// The write hangs. Calls, lists and status go on.
	done := make(chan string, 1)
	go func() {
		res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, 10*time.Second)
		done <- fmt.Sprintf("%s %v %d %v", res, err, len(s.Lists().Tools), s.Status().State)
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "hi") || !strings.Contains(got, fmt.Sprintf(" <nil> %d ready", tools)) {
			t.Errorf("during the write: %s", got)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("a call or Lists waited for the pin file write")
	}
	block.Store(false)
	release <- struct{}{}
	await.For(t, 10*time.Second, "echo withheld", func() bool { return slices.Contains(s.Status().PinChanged, "echo") })
	if got := len(s.Lists().Tools); got != tools-1 {
		t.Errorf("%d tools after the write, want %d", got, tools-1)
	}
}
