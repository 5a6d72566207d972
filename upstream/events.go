package upstream

import (
	"context"
	"encoding/json"
	"sync"
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
	// EventFlush is the hub's to Reply to as soon as it reads it, with
	// nothing: every event before it has then been routed. A call whose
	// server sent events while it ran waits for one before it returns (see
	// Server.Request), so that the call's progress and log messages reach
	// the client before its result, as they left the server.
	EventFlush
)

func (k EventKind) String() string {
	switch k {
	case EventNotification:
		return "notification"
	case EventRequest:
		return "request"
	case EventFlush:
		return "flush"
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
	// message came during, where the transport can tell (see callContext).
	// For a request it also carries the deadline and ends when the server
	// no longer waits for the answer.
	Context context.Context

	reply *reply // EventRequest and EventFlush
}

// Reply answers a request event, or acknowledges a flush. Only the first call counts; later calls,
// calls after the deadline and calls on a notification do nothing, so
// Reply never blocks. An error that is an *RPCError reaches the server as
// that JSON-RPC error.
func (e Event) Reply(result json.RawMessage, err error) {
	if e.reply != nil {
		e.reply.send(result, err)
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
	select {
	case m.events <- e:
		e.Server.emitted.Add(1)
		return
	default:
	}
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

// flushWait bounds how long a call waits for the hub to route the events
// its server sent during it: only a hub that is not reading Events at all
// takes that long.
const flushWait = time.Second

// flush waits, within ctx and m.flushWait, until the hub has read every
// event put on Events before it.
func (m *Manager) flush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.flushWait)
	defer cancel()
	r := newReply()
	select {
	case m.events <- Event{Kind: EventFlush, Context: ctx, reply: r}:
	case <-ctx.Done():
		return
	}
	select {
	case <-r.ch:
	case <-ctx.Done():
	}
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
