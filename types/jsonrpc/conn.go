package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Defaults of a Conn.
const (
	// DefaultWriteTimeout bounds one write to the peer: a peer that takes
	// longer to read it is taken to be gone.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxInflight is how many of the peer's requests are answered
	// at once; more are refused with CodeServerBusy.
	DefaultMaxInflight = 256
	// DefaultMaxInflightBytes bounds the bytes of the peer's requests
	// being answered at once, each counted from when it is read until
	// its answer is written: a count of requests bounds nothing when a
	// request may be 10 MiB (STYLE 17). A request over it is refused with
	// CodeServerBusy. What a request costs the hub is a small multiple of
	// its bytes (its body, and the call it becomes upstream: about four
	// times in all for a tools/call).
	DefaultMaxInflightBytes = 64 << 20
	// closeWait bounds how long Close waits for a reader or writer blocked
	// on a stream that cannot be interrupted (a blocking stdin or stdout).
	closeWait = time.Second
)

// Errors a connection ends with when writing fails: the peer has gone
// (ErrWrite wraps the stream's error) or stopped reading.
var (
	ErrWrite        = errors.New("write to the peer failed")
	ErrWriteTimeout = fmt.Errorf("%w: the peer stopped reading (a write took longer than the write timeout)", ErrWrite)
)

// ConnOptions configure a Conn; zero values mean the defaults.
type ConnOptions struct {
	MaxMessageSize int           // DefaultMaxMessageSize; the Stream applies it (NewLineStream's maxSize)
	WriteTimeout   time.Duration // DefaultWriteTimeout
	Outbox         int           // DefaultOutbox notifications held for a slow peer
	MaxInflight    int           // DefaultMaxInflight requests of the peer at once
	// MaxInflightBytes bounds the bytes of the peer's requests being
	// answered at once (DefaultMaxInflightBytes); a request larger than
	// the whole bound is taken when nothing else is in flight.
	MaxInflightBytes int64
	// Admit counts a request of n bytes against budgets beyond the
	// connection's own (its caller's, the process's), when it is read;
	// it returns what gives them back, called once the request is
	// answered, or the error to refuse it with. It must not block. Nil:
	// none.
	Admit func(n int64) (release func(), refuse *Error)

	// Handle answers one of the peer's requests, on a goroutine of its
	// own; ctx ends when the peer cancels it or the connection closes. It
	// returns the raw result or an error (see ToError). Nil: every request
	// is answered "method not found". A Handle that panics answers its
	// request -32603 ("internal error"); the Conn and every other request
	// go on.
	Handle func(ctx context.Context, m *Message) (json.RawMessage, error)
	// Notify takes the peer's notifications one at a time, in order, on
	// the reading goroutine (or Take's caller); it must not block. notifications/cancelled is acted on by the
	// Conn before Notify sees it.
	Notify func(m *Message)
	// Refused hears of every message refused (not JSON, over the limits),
	// with the message or its first bytes; the peer has been answered where
	// it could be. May be nil.
	Refused func(err error, msg []byte)
	// Panicked hears of every panic the Conn recovered, in Handle (method
	// is the request's), Notify or Refused, with the panic's value and
	// stack. Nil: ignored.
	Panicked func(method string, v any, stack []byte)
	// CallIDPrefix, when set, makes the ids of the Conn's own requests
	// JSON strings, the prefix followed by a number, instead of numbers:
	// replicas that each send requests in one client session (an HTTP
	// session any replica serves) give each a prefix of its own, so that
	// their ids never collide and an answer names the replica it is for.
	// Only ASCII letters, digits, '-' and '_' (no escaping needed).
	CallIDPrefix string
	// Quiet leaves refused messages unanswered (an upstream's stray
	// lines); a call whose answer was refused fails either way.
	Quiet bool
	// CancelParams, when set, makes the params of the
	// notifications/cancelled a Call sends when its ctx ends, from the
	// call's params and those the Conn made ({"requestId", "reason"}):
	// an MCP peer of 2026-07-28 wants the call's _meta on it too. Nil:
	// they go as made.
	CancelParams func(call, cancel json.RawMessage) json.RawMessage
}

// Conn is one JSON-RPC conversation over a Stream of whole messages: the
// client's stdio, a downstream HTTP session (over a Router, see
// Relation), an upstream. It correlates outgoing calls, dispatches
// incoming requests (at most MaxInflight at once), handles
// cancellation, and writes through a bounded outbox with one writer
// goroutine and a deadline on every write, so that no reader ever writes
// and no party that stops reading holds up anyone but itself.
//
// Hand-offs between goroutines are what a call costs, more than its JSON,
// so a Conn makes few: the goroutine that reads a request answers it,
// and reads on after it, handing reading on to an idle worker only when
// the request takes longer than inlineFor; an answer with nothing queued
// before it is written by its handler; a request whose Call may not wait
// is written by the caller when the stream can take it at once
// (TryWriter), else by the writer. A handler that panics answers -32603
// and nothing else stops.
type Conn struct {
	opts     ConnOptions
	s        Stream
	batch    BatchWriter   // s, where it writes several messages at once
	try      TryWriter     // s, where it can write without waiting
	bounded  bool          // s ends its writes at their deadline: no timer needed
	routes   bool          // s is a Router: each write says what it relates to
	buffered moreBuffered  // s, where it says whether more was read ahead
	decoded  MessageReader // s, where it hands over messages decoded already
	out      *Outbox
	workers  *Workers
	calls    *Calls
	inflight *Inflight
	held     *semaphore.Weighted // bytes of the peer's requests in flight (MaxInflightBytes)
	nmu      sync.Mutex          // held while a notification of the peer is taken (Notify)

	done     chan struct{} // closed when input ended or the connection failed
	doneOnce sync.Once
	errMu    sync.Mutex
	err      error

	readDone  chan struct{}
	writeDone chan struct{}
	stopWrite chan struct{} // closed to abandon the queue
	closeOnce sync.Once
	startOnce sync.Once
	wmu       sync.Mutex // held for a write: the writer's or a direct one
	one       [1][]byte  // the message send writes itself; guarded by wmu
	wctx      *writeCtx  // the ctx of every write
	wtimer    *ownedTimer
	turn      func() // c.readTurn, made once (a method value allocates)
	// inline is set while the holder of the turn at reading answers a
	// request; whoever clears it (the holder when done, or itimer's
	// handTurnOn) decides who reads next.
	inline   atomic.Bool
	inlineAt atomic.Int64 // unix nanoseconds: when the request answered inline was read
	armed    atomic.Bool  // itimer is armed
	itimer   *ownedTimer  // hands the turn on from a request slower than inlineFor
}

// NewConn prepares a conversation over s; Start starts it, once whoever
// handles its messages is ready. Close ends it, and closes s.
// opts.MaxMessageSize is for the stream's constructor: s applies it.
func NewConn(s Stream, opts ConnOptions) *Conn {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = DefaultMaxInflight
	}
	if opts.MaxInflightBytes <= 0 {
		opts.MaxInflightBytes = DefaultMaxInflightBytes
	}
	c := &Conn{
		opts: opts, s: s,
		out:       NewOutbox(opts.Outbox),
		workers:   NewWorkers(),
		calls:     NewCallsPrefixed(opts.CallIDPrefix),
		inflight:  NewInflight(opts.MaxInflight),
		held:      semaphore.NewWeighted(opts.MaxInflightBytes),
		done:      make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
		stopWrite: make(chan struct{}),
	}
	c.batch, _ = s.(BatchWriter)
	c.try, _ = s.(TryWriter)
	c.buffered, _ = s.(moreBuffered)
	c.decoded, _ = s.(MessageReader)
	if b, ok := s.(writeBounder); ok {
		c.bounded = b.boundsWrites()
	}
	c.wctx = newWriteCtx()
	if r, ok := s.(Router); ok && r.Routes() {
		c.routes, c.wctx.routes = true, true
		c.bounded = true          // its writes do not wait for the peer
		c.batch, c.try = nil, nil // one message a Write, each with its Relation
	}
	c.wtimer = newOwnedTimer(c.writeTimedOut)
	c.turn = c.readTurn
	c.itimer = newOwnedTimer(c.handTurnOn)
	c.workers.Panicked = func(v any, stack []byte) { c.panicked("", v, stack) }
	return c
}

// Start starts reading and writing. Calling it again does nothing.
func (c *Conn) Start() {
	c.startOnce.Do(func() {
		c.workers.Go(c.turn)
		go c.write()
	})
}

// Done is closed when the peer's input has ended or the connection failed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection is done: io.EOF when the peer closed its
// output, the failure otherwise; nil while it is not done.
func (c *Conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// Dropped is how many notifications to the peer were dropped.
func (c *Conn) Dropped() uint64 { return c.out.Dropped() }

// Inflight is how many of the peer's requests are being answered.
func (c *Conn) Inflight() int { return c.inflight.Len() }

// WaitIdle waits until no request of the peer is in flight, or ctx ends.
func (c *Conn) WaitIdle(ctx context.Context) { c.inflight.Wait(ctx) }

func (c *Conn) finish(err error) {
	c.doneOnce.Do(func() {
		c.errMu.Lock()
		c.err = err
		c.errMu.Unlock()
		c.calls.Close(fmt.Errorf("%w: %w", ErrClosed, err))
		close(c.done)
	})
}

// fail ends a connection that cannot go on: queued messages are abandoned
// and the stream is closed.
func (c *Conn) fail(err error) {
	c.finish(err)
	c.out.Close()
	c.closeOnce.Do(func() { close(c.stopWrite) })
	c.inflight.CancelAll()
	_ = c.s.Close()
}

// Call sends a request and waits for its answer, ctx, or the end of the
// connection. The peer's error answer comes back as *Error. Call returns
// when ctx ends even while its request is queued or being written (a
// peer that stopped reading): the writer goes on with it, within the
// write timeout. The peer is told of a call given up with
// notifications/cancelled, unless the call is an initialize.
func (c *Conn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.CallSent(ctx, method, params, nil)
}

// CallSent is Call that tells sent (unless nil) the id of its request
// before the request goes out: a caller whose stream relates later
// messages to one of its requests (an HTTP upstream sends its own
// requests inside a call's answer) can tie them back to the call, as
// net/http/httptrace hooks a request's events, but passed explicitly.
func (c *Conn) CallSent(ctx context.Context, method string, params json.RawMessage, sent func(id json.RawMessage)) (json.RawMessage, error) {
	return c.CallSentBy(ctx, time.Time{}, method, params, sent)
}

// CallSentBy is CallSent bounded by deadline as well as ctx (zero: by ctx
// alone): past it the call returns context.DeadlineExceeded and the peer
// is told, as when ctx ends. It is a context.WithDeadline made cheap: the
// connection's one timer (Calls.StartRequestBy) in place of a context,
// its timer and its place among ctx's children each call.
func (c *Conn) CallSentBy(ctx context.Context, deadline time.Time, method string, params json.RawMessage, sent func(id json.RawMessage)) (json.RawMessage, error) {
	id, msg, ch, err := c.calls.StartRequestBy(method, params, deadline)
	if err != nil {
		return nil, err
	}
	if sent != nil {
		sent(id)
	}
	rel := c.relation(ctx, false)
	switch {
	case ctx.Done() == nil && deadline.IsZero():
		err = c.send(msg, rel) // nothing to return early for: write it here
	case c.tryWrite(msg):
	default:
		err = c.out.SendRelated(msg, rel)
	}
	if err != nil {
		c.calls.Forget(id)
		return nil, c.closedErr(err)
	}
	res, err := c.calls.Wait(ctx, id, ch)
	if givenUp(ctx, err) && method != "initialize" {
		// The peer is told, as MCP asks, so it can stop the work; but
		// never of an initialize, which MCP says a client must not
		// cancel (one given up ends with the connection).
		why := err
		if ctx.Err() != nil {
			why = ctx.Err()
		}
		reason := marshalOrNull(map[string]any{"requestId": id, "reason": why.Error()})
		if c.opts.CancelParams != nil {
			reason = c.opts.CancelParams(params, reason)
		}
		_ = c.out.SendRelated(EncodeNotification("notifications/cancelled", reason), c.relation(ctx, true))
	}
	return res, err
}

// givenUp reports whether a call's err is the caller giving up on it (ctx
// ended, or the call's deadline passed). A peer's error answer is not:
// Calls.Wait takes an answer that came by the time ctx ended, and nothing
// is left to cancel.
func givenUp(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if _, answered := err.(*Error); answered {
		return false
	}
	return ctx.Err() != nil || err == context.DeadlineExceeded
}

// Notify sends a notification; ErrDropped when the peer is behind.
func (c *Conn) Notify(method string, params json.RawMessage) error {
	return c.NotifyRaw(EncodeNotification(method, params))
}

// NotifyRaw sends a notification already encoded.
func (c *Conn) NotifyRaw(msg []byte) error { return c.closedErr(c.out.Notify(msg)) }

// NotifyRawContext is NotifyRaw for a notification sent with ctx: over a
// Router, one sent with a handler's ctx relates to its request (see
// RelatedID).
func (c *Conn) NotifyRawContext(ctx context.Context, msg []byte) error {
	return c.closedErr(c.out.SendRelated(msg, c.relation(ctx, true)))
}

// relation is the Relation of a message sent with ctx: none but its kind
// unless the stream routes.
func (c *Conn) relation(ctx context.Context, notification bool) Relation {
	if !c.routes {
		return Relation{Notification: notification}
	}
	return Relation{ID: RelatedID(ctx), Notification: notification}
}

func (c *Conn) closedErr(err error) error {
	if errors.Is(err, ErrClosed) {
		if why := c.Err(); why != nil {
			return fmt.Errorf("%w: %w", ErrClosed, why)
		}
	}
	return err
}

// Answer encodes the answer to the request with id; a nil result is {}.
func Answer(id, result json.RawMessage, err error) []byte {
	if err != nil {
		return EncodeError(id, ToError(err))
	}
	if result == nil {
		result = json.RawMessage("{}")
	}
	return EncodeResult(id, result)
}

// panicked reports a recovered panic to the Panicked hook.
func (c *Conn) panicked(method string, v any, stack []byte) {
	if c.opts.Panicked != nil {
		c.opts.Panicked(method, v, stack)
	}
}

// recovered is deferred around a callback of the Conn's user: a panic in
// it is reported, and the goroutine goes on.
func (c *Conn) recovered(method string) {
	if v := recover(); v != nil {
		c.panicked(method, v, debug.Stack())
	}
}

// Close ends the conversation: the peer's requests in flight are
// cancelled, calls waiting fail, what is queued is written (within the
// write timeout), then the stream is closed. It returns once every
// goroutine it started has ended (the reader, the writer, the workers
// that ran handlers, the write timeout's func), except a reader or writer
// blocked on a stream that closing does not interrupt (a blocking stdin
// or stdout): that one is waited for closeWait at most, and ends when the
// stream does.
func (c *Conn) Close() error {
	c.Start() // so that the goroutines Close waits for exist
	c.inflight.Stop()
	c.finish(ErrClosed)
	c.inflight.CancelAll()
	c.inflight.Wait(context.Background())
	c.out.Close()
	t := time.NewTimer(c.opts.WriteTimeout)
	select {
	case <-c.writeDone:
	case <-t.C:
		c.fail(ErrWriteTimeout)
	}
	t.Stop()
	c.closeOnce.Do(func() { close(c.stopWrite) })
	_ = c.s.Close()
	t = time.NewTimer(closeWait)
	defer t.Stop()
	for _, ch := range []chan struct{}{c.writeDone, c.readDone} {
		select {
		case <-ch:
		case <-t.C:
		}
	}
	c.itimer.Stop() // no turn handed on once the workers are waited for
	c.workers.Stop()
	select {
	case <-c.readDone:
		c.workers.Wait() // the reader was the last that could start one
	default: // the reader is blocked on a stream closing does not end
	}
	c.wtimer.Stop()
	return nil
}
