package upstream

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// collector reads a manager's events into a list, as the hub's loop
// would, taking delay for each and then marking it routed, without
// answering requests.
type collector struct {
	delay  time.Duration
	mu     sync.Mutex
	events []Event
	stop   chan struct{}
	done   chan struct{}
}

func collect(t *testing.T, m *Manager) *collector { return collectSlowly(t, m, 0) }

func collectSlowly(t *testing.T, m *Manager, delay time.Duration) *collector {
	c := &collector{delay: delay, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			case e := <-m.Events():
				time.Sleep(c.delay)
				c.mu.Lock()
				c.events = append(c.events, e)
				c.mu.Unlock()
				e.Routed()
			}
		}
	}()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

func (c *collector) list() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

func (c *collector) count() int { return len(c.list()) }

// A server that sends list_changed in a flood gets its lists fetched a few
// times, never once per notification, and no goroutine per notification.
func TestListChangedFloodCoalesced(t *testing.T) {
	_, s := startFake(t, fakeConfig(t, "", "-flood"))
	before := stateOf(t, s).ToolLists
	goroutines := runtime.NumGoroutine()

	const n = 20_000
	if got := callTool(t, s, "flood", "notifications/tools/list_changed", n); got != "flooded" {
		t.Fatalf("flood: %q", got)
	}
	// The reply came after every notification was read: whatever they
	// started is running or done by now.
	if g := runtime.NumGoroutine(); g > goroutines+20 {
		t.Errorf("%d goroutines after the flood, %d before", g, goroutines)
	}
	await.For(t, 10*time.Second, "the refreshes to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.refreshing && s.pendingLists == 0
	})
	refreshes := s.refreshes.Load()
	if refreshes == 0 || refreshes > n/100 {
		t.Errorf("%d list_changed made %d refreshes; want at least 1 and at most %d", n, refreshes, n/100)
	}
	if got := stateOf(t, s).ToolLists - before; uint64(got) != refreshes {
		t.Errorf("the fake saw %d tools/list, the server counted %d refreshes", got, refreshes)
	}
	t.Logf("%d list_changed: %d refreshes", n, refreshes)
}

// A list_changed fetches the list again, and the change reaches the hub.
func TestListChangedRefetches(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	drain(m.Changes())
	echo := func() string {
		for _, it := range s.Lists().Tools {
			if it.Key == "echo" {
				var d struct{ Description string }
				_ = json.Unmarshal(it.Raw, &d)
				return d.Description
			}
		}
		return ""
	}
	if got := echo(); got != "Echo text back" {
		t.Fatalf("echo: %q", got)
	}
	prompts := len(s.Lists().Prompts)
	callTool(t, s, "mutate", "", 0) // changes echo, then sends tools/list_changed
	// The new definition differs from the pinned one: it is withheld.
	await.For(t, 5*time.Second, "the new echo", func() bool { return slices.Contains(s.Status().PinChanged, "echo") })
	if got := echo(); got != "" {
		t.Errorf("echo changed and still served: %q", got)
	}
	select {
	case <-m.Changes():
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no change signalled")
	}
	if got := len(s.Lists().Prompts); got != prompts {
		t.Errorf("prompts after a tools/list_changed: %d, want %d kept", got, prompts)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// Requests from a server beyond maxOutstanding are refused at once; those
// within it reach the hub, with no params when the server sent none.
func TestRequestsCapped(t *testing.T) {
	// "At once": well before the call timeout, which a refusal that
	// waited for a slot would take; a long one, so that a busy machine
	// cannot pass for that.
	m, s := startFake(t, fakeConfig(t, "call_timeout: 10m", "-flood"))
	c := collect(t, m)
	const n = 200
	callTool(t, s, "flood", "roots/list", n)
	await.For(t, 5*time.Second, "the refusals", func() bool { return stateOf(t, s).Refusals == n-maxOutstanding })
	// The fake sent n and saw n-maxOutstanding refused: no more can come.
	await.For(t, 5*time.Second, "the requests within the cap", func() bool { return c.count() == maxOutstanding })
	// A notification sent after the flood comes after every event the
	// flood made: once it is here, no request is still on its way.
	callTool(t, s, "flood", "notifications/message", 1)
	await.For(t, 5*time.Second, "the notification after the flood", func() bool {
		events := c.list()
		return len(events) > 0 && events[len(events)-1].Kind == EventNotification
	})
	events := slices.DeleteFunc(c.list(), func(e Event) bool { return e.Kind != EventRequest })
	if len(events) != maxOutstanding {
		t.Fatalf("%d requests reached the hub, want %d", len(events), maxOutstanding)
	}
	st := stateOf(t, s)
	var refusal struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(st.LastRefusal, &refusal)
	if refusal.Code != codeServerError || !strings.Contains(refusal.Message, "too many requests") {
		t.Errorf("refusal: %s", st.LastRefusal)
	}
	for _, e := range events {
		if e.Kind != EventRequest || e.Method != "roots/list" || e.Server != s || e.Params != nil {
			t.Fatalf("event %+v", e)
		}
		if d, ok := e.Context.Deadline(); !ok || time.Until(d) < 5*time.Minute {
			t.Fatalf("request deadline %v, %v", d, ok)
		}
	}
	if got := len(s.outstanding); got != maxOutstanding {
		t.Errorf("%d outstanding, want %d", got, maxOutstanding)
	}
	for _, e := range events {
		e.Reply(json.RawMessage(`{"roots":[]}`), nil)
		e.Reply(nil, &RPCError{Code: 1, Message: "a second answer is ignored"})
	}
	await.For(t, 5*time.Second, "the answers", func() bool { return stateOf(t, s).Answers == n })
	if st := stateOf(t, s); st.Refusals != n-maxOutstanding {
		t.Errorf("%d refusals after the answers, want %d", st.Refusals, n-maxOutstanding)
	}
	if got := len(s.outstanding); got != 0 {
		t.Errorf("%d outstanding after the answers", got)
	}
	// The slots are free again.
	callTool(t, s, "flood", "sampling/createMessage", 3)
	await.For(t, 5*time.Second, "new requests", func() bool { return c.count() == maxOutstanding+1+3 }) // and the notification
}

// A request the client never answers is answered with an error at the
// server's call timeout; a late answer goes nowhere.
func TestRequestDeadline(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "call_timeout: 150ms", "-flood"))
	c := collect(t, m)
	start := time.Now()
	callTool(t, s, "flood", "elicitation/create", 3)
	await.For(t, 5*time.Second, "the requests", func() bool { return c.count() == 3 })
	await.For(t, 5*time.Second, "the refusals", func() bool { return stateOf(t, s).Refusals == 3 })
	took := time.Since(start)
	if took < 150*time.Millisecond { // and the waits above bound it
		t.Errorf("answered after %s; the deadline is 150ms", took)
	}
	st := stateOf(t, s)
	if !strings.Contains(string(st.LastRefusal), "did not answer elicitation/create within 150ms") {
		t.Errorf("refusal: %s", st.LastRefusal)
	}
	for _, e := range c.list() {
		select {
		case <-e.Context.Done():
		default:
			t.Error("the request's context is not done after its deadline")
		}
		e.Reply(json.RawMessage(`{}`), nil)
		if len(e.reply.ch) != 1 {
			t.Error("a late answer was taken")
		}
	}
	// A late reply would be written before the state call, which the fake
	// reads after it.
	if st := stateOf(t, s); st.Answers != 3 {
		t.Errorf("%d answers, want the 3 refusals only", st.Answers)
	}
}

// The hub's answer to ping is its own: it never reaches the client.
func TestPingAnsweredLocally(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "", "-flood"))
	c := collect(t, m)
	callTool(t, s, "flood", "ping", 5)
	await.For(t, 5*time.Second, "the pongs", func() bool { return stateOf(t, s).Answers == 5 })
	if st := stateOf(t, s); st.Refusals != 0 || c.count() != 0 {
		t.Errorf("ping: %d refusals, %d events", st.Refusals, c.count())
	}
}

// When the hub does not keep up, notifications are dropped and counted:
// the reader of the server's messages never waits, so its replies still
// come at once.
func TestNotificationsDroppedWhenFull(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "", "-flood"))
	const extra = 500
	start := time.Now()
	callTool(t, s, "flood", "notifications/message", eventBuffer+extra)
	// A reader that waited would never finish the call (no one takes the
	// events): the bound is for that hang, not a timing.
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the flood took %s", took)
	}
	if got := m.Dropped(); got != extra {
		t.Errorf("dropped %d, want %d", got, extra)
	}
	if got := len(m.Events()); got != eventBuffer {
		t.Errorf("%d events waiting, want %d", got, eventBuffer)
	}
	e := <-m.Events()
	var p map[string]any
	if e.Kind != EventNotification || e.Method != "notifications/message" || e.Server != s || json.Unmarshal(e.Params, &p) != nil ||
		p["logger"] != "flood" || p["data"] != float64(0) || e.Context == nil {
		t.Errorf("first event: %+v (%s)", e, e.Params)
	}
	e.Reply(nil, nil) // does nothing on a notification
	drainEvents(m)
	callTool(t, s, "flood", "notifications/custom", 1)
	if e := <-m.Events(); e.Method != "notifications/custom" || e.Params != nil {
		t.Errorf("a notification without params: %+v (params %q)", e, e.Params)
	}
}

func drainEvents(m *Manager) {
	for {
		select {
		case <-m.Events():
		default:
			return
		}
	}
}

// A request that finds the events full waits for room, within its
// deadline, rather than being dropped.
func TestRequestWaitsForRoom(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "call_timeout: 5s", "-flood"))
	callTool(t, s, "flood", "notifications/message", eventBuffer)
	// The request was read before the flood's answer came: it is
	// waiting for room now.
	callTool(t, s, "flood", "roots/list", 1)
	// The request has its slot: it waits for room in the full Events.
	await.For(t, 5*time.Second, "the request", func() bool { return len(s.outstanding) == 1 })
	if n := len(m.Events()); n != eventBuffer {
		t.Fatalf("%d events waiting, want %d", n, eventBuffer)
	}
	for range eventBuffer {
		if e := <-m.Events(); e.Kind != EventNotification {
			t.Fatalf("event %+v before the notifications", e)
		}
	}
	var e Event
	select {
	case e = <-m.Events():
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the request never came")
	}
	if e.Kind != EventRequest || e.Method != "roots/list" {
		t.Fatalf("event %+v", e)
	}
	e.Reply(json.RawMessage(`{"roots":[]}`), nil)
	await.For(t, 5*time.Second, "the answer", func() bool { return stateOf(t, s).Answers == 1 })
	if st := stateOf(t, s); st.Refusals != 0 {
		t.Errorf("refused: %s", st.LastRefusal)
	}
}

// A request the server sends during a call carries that call's context,
// and the client's answer, error or not, reaches the server.
func TestRequestDuringCall(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	type ctxKey struct{}
	go func() {
		e := <-m.Events()
		defer e.Routed()
		if e.Kind != EventRequest || e.Method != "elicitation/create" || e.Context.Value(ctxKey{}) != "the call" {
			e.Reply(nil, &RPCError{Code: -1, Message: "unexpected event"})
			return
		}
		e.Reply(nil, &RPCError{Code: -32042, Message: "declined by the test"})
	}()
	ctx := context.WithValue(t.Context(), ctxKey{}, "the call")
	res, err := s.Request(ctx, nil, "tools/call", map[string]any{"name": "ask"}, 10*time.Second)
	if err != nil || !strings.Contains(string(res), "declined by the test") || !strings.Contains(string(res), "-32042") {
		t.Errorf("ask: %s, %v", res, err)
	}
}

// What a server sends during a call reaches the hub's loop before the
// call returns, however slow the loop.
func TestEventsRoutedBeforeTheCallReturns(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	m.routeWait = time.Hour
	c := collectSlowly(t, m, 20*time.Millisecond)
	res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"text": "x"},
		"_meta": map[string]any{"progressToken": "p"}}, 10*time.Second)
	if err != nil || !strings.Contains(string(res), "progressed x") {
		t.Fatalf("progress: %s, %v", res, err)
	}
	if got := c.count(); got != 3 {
		t.Errorf("%d progress notifications routed when the call returned, want 3", got)
	}
	for _, e := range c.list() {
		if e.Method != "notifications/progress" || !strings.Contains(string(e.Params), `"progressToken":"p"`) {
			t.Errorf("event %s %s", e.Method, e.Params)
		}
	}
}

// waiters is how many calls wait for s's events to be routed.
func waiters(s *Server) int {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	return len(s.events.waiters)
}

// A call whose server sent events during it waits for those events to be
// routed, and for nothing else: it puts nothing of its own through the
// hub's loop (no flush), so it returns as soon as the hub marks the last
// of them routed.
func TestCallWaitsForItsOwnEventsOnly(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, ""))
	m.routeWait = time.Hour // only Routed ends the wait
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"text": "x"},
			"_meta": map[string]any{"progressToken": "p"}}, 10*time.Second)
		done <- outcome{res, err}
	}()
	var got []Event
	for range 3 {
		got = append(got, <-m.Events())
	}
	got[0].Routed()
	got[1].Routed()
	// The call has its result and waits for the third progress only.
	await.For(t, 10*time.Second, "the call to wait for its events", func() bool { return waiters(s) == 1 })
	select {
	case o := <-done:
		t.Fatalf("the call returned before its last progress was routed: %s, %v", o.res, o.err)
	default:
	}
	got[2].Routed()
	got[2].Routed() // a second time does nothing
	select {
	case o := <-done:
		if o.err != nil || !strings.Contains(string(o.res), "progressed x") {
			t.Fatalf("progress: %s, %v", o.res, o.err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the call did not return once its events were routed")
	}
	if n := len(m.Events()); n != 0 {
		t.Errorf("%d events through the loop after the call, want none (no flush)", n)
	}
	if n := waiters(s); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}

// A call during which its server sent nothing returns at once and does
// not touch the hub's loop, even while earlier events of the server wait
// there unrouted.
func TestQuietCallDoesNotTouchTheLoop(t *testing.T) {
	m, s := startFake(t, fakeConfig(t, "", "-flood"))
	m.routeWait = 0 // the flood's call does not wait for its events
	callTool(t, s, "flood", "notifications/message", 3)
	m.routeWait = time.Hour
	for range 2 {
		(<-m.Events()).Routed()
	}
	if n := len(m.Events()); n != 1 {
		t.Fatalf("%d events waiting, want 1", n)
	}
	res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "quiet"}}, 10*time.Second)
	if err != nil || !strings.Contains(string(res), "quiet") {
		t.Fatalf("echo: %s, %v", res, err)
	}
	if n := len(m.Events()); n != 1 {
		t.Errorf("%d events waiting after a quiet call, want the 1 from before", n)
	}
}

// The log wakes a waiter only when every event below its mark has
// settled, whatever order they settle in, and a waiter whose context
// ends leaves.
func TestEventLogSettlesOutOfOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newEventLog()
		a, b, c := l.open(), l.open(), l.open()
		end := l.mark()
		woke := make(chan struct{})
		go func() {
			l.wait(t.Context(), end, time.Hour)
			close(woke)
		}()
		for _, seq := range []uint64{c, a} {
			l.settle(seq)
			synctest.Wait()
			select {
			case <-woke:
				t.Fatalf("woken with event %d unsettled", b)
			default:
			}
		}
		l.settle(b)
		synctest.Wait()
		select {
		case <-woke:
		default:
			t.Fatal("not woken once every event settled")
		}
		if low := l.lowLocked(); low != end || len(l.unsettled) != 0 || len(l.waiters) != 0 {
			t.Errorf("low %d (want %d), %d unsettled, %d waiters", low, end, len(l.unsettled), len(l.waiters))
		}

		d := l.open()
		ctx, cancel := context.WithCancel(t.Context())
		left := make(chan struct{})
		go func() {
			l.wait(ctx, l.mark(), time.Hour)
			close(left)
		}()
		synctest.Wait()
		cancel()
		<-left
		if len(l.waiters) != 0 {
			t.Errorf("%d waiters after the wait ended", len(l.waiters))
		}
		l.wait(t.Context(), l.mark(), time.Minute) // the limit ends it
		l.settle(d)
		l.wait(t.Context(), l.mark(), time.Hour) // nothing to wait for
	})
}

// What the log keeps is bounded by the events not settled yet, not by
// how many settled after one that is stuck (a hub that stopped reading
// while its server floods it with notifications, all dropped).
func TestEventLogBoundedWhileOneIsStuck(t *testing.T) {
	t.Parallel()
	l := newEventLog()
	stuck := l.open()
	for range 100_000 {
		l.settle(l.open()) // dropped at once
	}
	if n := len(l.unsettled); n != 1 {
		t.Errorf("%d kept, want 1", n)
	}
	l.settle(stuck)
	if n, low := len(l.unsettled), l.lowLocked(); n != 0 || low != l.mark() {
		t.Errorf("%d kept, low %d, mark %d", n, low, l.mark())
	}
}
