package upstream

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// EventKind says what an Event carries.
type EventKind int

const (
	// EventNotification is a notification from a server. list_changed
	// never arrives as one: the server fetches its lists again itself and
	// Changes reports the outcome.
	EventNotification EventKind = iota + 1
	// EventRequest is a request from a server to the client (sampling,
	// elicitation, roots). It must be answered with Reply; the server
	// answers it with an error itself when its deadline passes first.
	EventRequest
)

func (k EventKind) String() string {
	switch k {
	case EventNotification:
		return "notification"
	case EventRequest:
		return "request"
	}
	return "unknown"
}

// Event is a message a server sent on its own initiative, on its way to
// the hub. The hub reads them from Manager.Events.
type Event struct {
	Kind   EventKind
	Server *Server
	Method string
	// Params are the message's params as the server sent them; nil when it
	// sent none, never "null".
	Params json.RawMessage
	// Context is never nil. It carries the values of the hub's call the
	// message came during, where the transport can tell (see callContext),
	// and a notification's carries the connection it came on (see ConnOf).
	// For a request it also carries the deadline and ends when the server
	// no longer waits for the answer.
	Context context.Context
	// Owner is the owner (see Server.Request) of the call the message came
	// during, or of the connection of its own it came on; nil for none
	// known.
	Owner Owner
	// Part is the part of the owner's work (RequestOn's part) that the
	// call a request came during was made for (see callContext); zero for
	// none.
	Part uint64
	// OwnConn is true for a message that came on a connection of its
	// owner's own (isolation: per-session): it is that owner's alone,
	// whoever else the server's shared connection serves.
	OwnConn bool
	// User is the key of the user whose own connection (auth: per-user)
	// the message came on, "" for any other connection: such a message is
	// for that user's sessions alone, as the connection is theirs, and
	// never another user's, whoever else has calls in flight to the server.
	// Owner is then the owner of the user's call it came during, else (no
	// call of the user's known) the user's connection itself, whose
	// UserKey is User.
	User string
	// Ambiguous is true for a message that came while calls of several
	// owners were in flight to the server, over a transport that does not
	// say which one it belongs to: it is for no one rather than a guess.
	Ambiguous bool

	reply *reply // EventRequest
	seq   uint64 // the event's number in Server.events; 0 for none
}

// Reply answers a request event. Only the first call counts; later calls,
// calls after the deadline and calls on a notification do nothing, so
// Reply never blocks. An error that is an *RPCError reaches the server as
// that JSON-RPC error.
func (e Event) Reply(result json.RawMessage, err error) {
	if e.reply != nil {
		e.reply.send(result, err)
	}
}

// Routed tells the server that the hub has passed the event on (a
// notification queued to the sessions it is for, a request handed to
// what answers it). The hub's loop calls it after each event, in the
// order it reads them: a call of the server waits, before it returns, for
// the events the server sent before the call's result (see
// Server.Request). Later calls do nothing.
func (e Event) Routed() {
	if e.Server != nil && e.seq != 0 {
		e.Server.events.settle(e.seq)
	}
}

// reply carries the one answer to a request event.
type reply struct {
	once sync.Once
	ch   chan answer // buffered: sending never blocks
}

type answer struct {
	result json.RawMessage
	err    error
}

func newReply() *reply { return &reply{ch: make(chan answer, 1)} }

func (r *reply) send(result json.RawMessage, err error) {
	r.once.Do(func() { r.ch <- answer{result, err} })
}

// eventBuffer is how many events may wait for the hub. Notifications
// beyond it are dropped and counted, never waited for: the reader of an
// upstream's messages must keep reading, or its replies stall too.
const eventBuffer = 1024

// dropLogEvery is how often, at most, dropped notifications are logged.
const dropLogEvery = time.Second

// emit hands a notification to the hub without blocking: when the hub is
// not keeping up, it is dropped and counted.
func (m *Manager) emit(e Event) {
	e.seq = e.Server.events.open()
	select {
	case m.events <- e:
		return
	default:
	}
	e.Server.events.settle(e.seq)
	m.dropped.Add(1)
	m.droppedSince.Add(1)
	now := time.Now().UnixNano()
	last := m.dropLogged.Load()
	if now-last < int64(dropLogEvery) || !m.dropLogged.CompareAndSwap(last, now) {
		return
	}
	m.logger.Warn("upstream notifications dropped: the hub is not keeping up",
		"dropped", m.droppedSince.Swap(0), "upstream", e.Server.Config.ID(), "method", e.Method)
}

// put hands a request to the hub, waiting for room until ctx ends; it
// reports whether the hub has it.
func (m *Manager) put(ctx context.Context, e Event) bool {
	e.seq = e.Server.events.open()
	select {
	case m.events <- e:
		return true
	case <-ctx.Done():
		e.Server.events.settle(e.seq)
		return false
	}
}

// routeWait bounds how long a call waits for the hub to route the events
// its server sent before the call's result: only a hub that is not reading
// Events at all should take that long; on a busy machine the hub's loop
// may rebuild a view (search index included) between two events, which a
// second need not cover, and then the answer would overtake them.
const routeWait = 5 * time.Second

// eventLog numbers a server's events and knows which of them the hub has
// routed (or which were dropped), so that a call can wait for exactly the
// events its server sent before the call's result, and for nothing else.
//
// Why not a flush through the hub's loop: a flush queues behind every
// event of every server, and costs the call two hand-offs between
// goroutines even when its own events were routed long ago. The log costs
// a call that saw no event of its server two atomic loads (most calls),
// and a call that did only the wait for those events, which the hub
// routes in the order the server sent them.
type eventLog struct {
	next atomic.Uint64 // the number the next event gets, from 1; written under mu

	mu sync.Mutex // guards unsettled and waiters
	// unsettled are the numbers of the events neither routed nor dropped
	// yet, ascending: at most those waiting in Events and the requests
	// waiting for room there, however many the hub drops meanwhile.
	unsettled []uint64
	waiters   []logWaiter
}

type logWaiter struct {
	upto uint64        // wakes when every event below it is settled
	ch   chan struct{} // closed then
}

func newEventLog() *eventLog {
	l := &eventLog{}
	l.next.Store(1)
	return l
}

// open numbers a new event.
func (l *eventLog) open() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next.Load()
	l.next.Store(seq + 1)
	l.unsettled = append(l.unsettled, seq)
	return seq
}

// mark is the number the next event will get: the events opened so far are
// those below it.
func (l *eventLog) mark() uint64 { return l.next.Load() }

// lowLocked is the lowest number not settled: every event below it is.
func (l *eventLog) lowLocked() uint64 {
	if len(l.unsettled) > 0 {
		return l.unsettled[0]
	}
	return l.next.Load()
}

// settle records that the event seq was routed or dropped. Events of
// one server may settle out of the order they were numbered in (requests
// are numbered before they find room in Events); a waiter is woken only
// when every event below its mark has settled. Settling twice does
// nothing.
func (l *eventLog) settle(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, found := slices.BinarySearch(l.unsettled, seq)
	switch {
	case !found:
		return
	case i == 0:
		l.unsettled = l.unsettled[1:]
	default:
		l.unsettled = slices.Delete(l.unsettled, i, i+1)
		return // the lowest is unsettled still: no waiter can wake
	}
	low := l.lowLocked()
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.upto <= low {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

// wait waits until every event numbered below upto has settled, ctx ends
// or limit passes.
func (l *eventLog) wait(ctx context.Context, upto uint64, limit time.Duration) {
	l.mu.Lock()
	if upto <= l.lowLocked() {
		l.mu.Unlock()
		return
	}
	w := logWaiter{upto: upto, ch: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-w.ch:
		return
	case <-ctx.Done():
	case <-t.C:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiters = slices.DeleteFunc(l.waiters, func(o logWaiter) bool { return o.ch == w.ch })
}

// Dropped is how many notifications from servers were dropped because the
// hub did not take them in time, since New.
func (m *Manager) Dropped() uint64 { return m.dropped.Load() }

// rawParams are a message's params for an Event, encoded as
// jsonrpc.Params does: nil when absent or null.
func rawParams(v any) json.RawMessage {
	b, err := jsonrpc.Params(v)
	if err != nil || len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}
