package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Defaults of a Conn.
const (
	// DefaultWriteTimeout bounds one write to the peer: a peer that takes
	// longer to read it is taken to be gone.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxInflight is how many of the peer's requests are answered
	// at once; more are refused with CodeServerBusy.
	DefaultMaxInflight = 256
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
	MaxMessageSize int           // DefaultMaxMessageSize
	WriteTimeout   time.Duration // DefaultWriteTimeout
	Outbox         int           // DefaultOutbox notifications held for a slow peer
	MaxInflight    int           // DefaultMaxInflight requests of the peer at once

	// Handle answers one of the peer's requests, on a goroutine of its
	// own; ctx ends when the peer cancels it or the connection closes. It
	// returns the raw result or an error (see ToError). Nil: every request
	// is answered "method not found".
	Handle func(ctx context.Context, m *Message) (json.RawMessage, error)
	// Notify takes the peer's notifications on the reading goroutine, in
	// order; it must not block. notifications/cancelled is acted on by the
	// Conn before Notify sees it.
	Notify func(m *Message)
	// Refused hears of every message refused (not JSON, over the limits),
	// with the message or its first bytes; the peer has been answered where
	// it could be. May be nil.
	Refused func(err error, msg []byte)
	// Quiet leaves refused messages unanswered (an upstream's stray
	// lines); a call whose answer was refused fails either way.
	Quiet bool
}

// Conn is one JSON-RPC conversation over a byte stream of newline-
// delimited messages: the client's stdio, a stdio upstream. It correlates
// outgoing calls, dispatches incoming requests each on its own goroutine
// (at most MaxInflight), handles cancellation, and writes through a
// bounded outbox with one writer goroutine (an answer with nothing queued
// before it is written at once by its handler) and a deadline on every
// write, so that no reader ever writes and no party that stops reading
// holds up anyone but itself.
type Conn struct {
	opts     ConnOptions
	r        io.Reader
	w        io.Writer
	out      *Outbox
	workers  *Workers
	calls    *Calls
	inflight *Inflight

	ctx    context.Context // the handlers'; cancelled by Close
	cancel context.CancelFunc

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
}

// NewConn prepares a conversation reading r and writing w; Start starts
// it, once whoever handles its messages is ready. Close ends it.
func NewConn(r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = DefaultMaxInflight
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		opts: opts, r: r, w: w,
		out:      NewOutbox(opts.Outbox),
		workers:  NewWorkers(),
		calls:    NewCalls(),
		inflight: NewInflight(opts.MaxInflight),
		ctx:      ctx, cancel: cancel,
		done:      make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
		stopWrite: make(chan struct{}),
	}
	return c
}

// Start starts reading and writing. Calling it again does nothing.
func (c *Conn) Start() {
	c.startOnce.Do(func() {
		go c.read()
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

// fail ends a connection that cannot go on: queued messages are abandoned.
func (c *Conn) fail(err error) {
	c.finish(err)
	c.out.Close()
	c.closeOnce.Do(func() { close(c.stopWrite) })
	c.inflight.CancelAll()
	if cl, ok := c.w.(io.Closer); ok {
		_ = cl.Close()
	}
}

// Call sends a request and waits for its answer, ctx, or the end of the
// connection. The peer's error answer comes back as *Error.
func (c *Conn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id, ch, err := c.calls.Start()
	if err != nil {
		return nil, err
	}
	if err := c.send(EncodeRequest(id, method, params)); err != nil {
		c.calls.Forget(id)
		return nil, c.closedErr(err)
	}
	res, err := c.calls.Wait(ctx, id, ch)
	if err != nil && ctx.Err() != nil {
		// The peer is told, as MCP asks, so it can stop the work.
		reason := marshalOrNull(map[string]any{"requestId": id, "reason": ctx.Err().Error()})
		_ = c.out.Notify(EncodeNotification("notifications/cancelled", reason))
	}
	return res, err
}

// Notify sends a notification; ErrDropped when the peer is behind.
func (c *Conn) Notify(method string, params json.RawMessage) error {
	return c.NotifyRaw(EncodeNotification(method, params))
}

// NotifyRaw sends a notification already encoded.
func (c *Conn) NotifyRaw(msg []byte) error { return c.closedErr(c.out.Notify(msg)) }

func (c *Conn) closedErr(err error) error {
	if errors.Is(err, ErrClosed) {
		if why := c.Err(); why != nil {
			return fmt.Errorf("%w: %w", ErrClosed, why)
		}
	}
	return err
}

func (c *Conn) read() {
	defer close(c.readDone)
	err := ReadLines(c.r, c.opts.MaxMessageSize, c.receive, c.tooLarge)
	c.finish(err)
}

// tooLarge answers a message over the size limit: the call it answers
// fails at once (its id may come last, as the TypeScript SDK writes it),
// a request gets an error.
func (c *Conn) tooLarge(size int, head, tail []byte) {
	err := fmt.Errorf("sent a message of %d bytes, over the %d byte limit", size, c.opts.MaxMessageSize)
	c.refused(err, head)
	id := IDOf(head)
	if id == nil {
		id = IDOfTail(tail)
	}
	if id != nil {
		c.refuse(id, err, Errorf(CodeInvalidRequest, fmt.Sprintf("message of %d bytes is over the %d byte limit", size, c.opts.MaxMessageSize)))
	}
}

// refuse answers a refused message with id: the call it answers fails
// with err, or the peer is told e.
func (c *Conn) refuse(id json.RawMessage, err error, e *Error) {
	if id != nil && c.calls.Fail(id, err) {
		return
	}
	if !c.opts.Quiet {
		c.reply(id, nil, e)
	}
}

func (c *Conn) refused(err error, msg []byte) {
	if c.opts.Refused != nil {
		c.opts.Refused(err, msg)
	}
}

func (c *Conn) receive(line []byte) {
	m, err := Decode(line)
	if err != nil {
		c.refused(err, line)
		var de *DecodeError
		errors.As(err, &de)
		c.refuse(de.ID, fmt.Errorf("sent a message that is %w", de.Err), ToError(err))
		return
	}
	switch {
	case m.IsResponse():
		if !c.calls.Resolve(m) && m.Error != nil {
			c.refused(fmt.Errorf("the peer sent an error about no request of ours: %s", m.Error.Message), line)
		}
	case m.IsNotification():
		if m.Method == "notifications/cancelled" {
			c.inflight.Cancel(m.Params)
		}
		if c.opts.Notify != nil {
			c.opts.Notify(m)
		}
	default:
		c.out.WaitRoom(c.opts.MaxInflight, c.done) // answers not yet read count against the limit
		ctx, end, refuse := c.inflight.Begin(c.ctx, m.ID)
		if refuse != nil {
			c.reply(m.ID, nil, refuse)
			return
		}
		c.workers.Go(func() {
			var res json.RawMessage
			var err error
			if c.opts.Handle == nil {
				err = Errorf(CodeMethodNotFound, "Method not found: "+m.Method)
			} else {
				res, err = c.opts.Handle(ctx, m)
			}
			end(func() { _ = c.send(Answer(m.ID, res, err)) })
		})
	}
}

// reply queues the answer to a request, for the writer: the reader
// answers what it refuses this way, never writing itself. While the peer
// is not reading such answers the reader waits, so that a peer sending
// nothing but refused messages cannot grow the queue without bound.
func (c *Conn) reply(id, result json.RawMessage, err error) {
	c.out.WaitRoom(c.opts.MaxInflight, c.done)
	_ = c.out.Send(Answer(id, result, err))
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

// deadliner is a stream whose writes can time out by themselves (a pipe
// or socket the runtime polls).
type deadliner interface{ SetWriteDeadline(time.Time) error }

func (c *Conn) write() {
	defer close(c.writeDone)
	var buf []byte
	for {
		if c.out.Closed() && c.out.Len() == 0 {
			return // Close's signal may have been taken by the last batch
		}
		select {
		case <-c.out.Ready():
		case <-c.stopWrite:
			return
		}
		c.wmu.Lock()
		batch := c.out.TakeNow()
		if len(batch) == 0 {
			c.wmu.Unlock()
			if c.out.Closed() {
				return
			}
			continue
		}
		buf = buf[:0]
		for _, m := range batch {
			buf = append(append(buf, m...), '\n')
		}
		err := c.writeTimed(buf)
		c.wmu.Unlock()
		if err != nil {
			return
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large message's buffer
		}
	}
}

// send sends a message that must not be lost. When nothing waits before
// it and no write is under way it is written at once, on the calling
// goroutine (a handler or a caller, which may wait on the peer anyway;
// never the reader), saving the hand-off to the writer; else it is
// queued.
func (c *Conn) send(msg []byte) error {
	if c.wmu.TryLock() {
		if c.out.Len() == 0 && !c.out.Closed() {
			err := c.writeTimed(append(msg, '\n')) // msg is ours: the encoders leave room
			c.wmu.Unlock()
			if err != nil {
				return c.closedErr(ErrClosed)
			}
			return nil
		}
		c.wmu.Unlock()
	}
	return c.out.Send(msg)
}

// writeTimed writes b within the write timeout: by the stream's own
// deadline where it has one, else by a timer that fails the connection
// (the blocked write is then abandoned with it). A failed write ends the
// connection. c.wmu is held.
func (c *Conn) writeTimed(b []byte) error {
	err := c.writeDeadline(b)
	if err != nil {
		if !errors.Is(err, ErrWrite) {
			err = fmt.Errorf("%w: %w", ErrWrite, err)
		}
		c.fail(err)
	}
	return err
}

func (c *Conn) writeDeadline(b []byte) error {
	if d, ok := c.w.(deadliner); ok {
		if err := d.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err == nil {
			_, err := c.w.Write(b)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return ErrWriteTimeout
			}
			return err
		}
	}
	t := time.AfterFunc(c.opts.WriteTimeout, func() { c.fail(ErrWriteTimeout) })
	_, err := c.w.Write(b)
	if !t.Stop() {
		return ErrWriteTimeout
	}
	return err
}

// Close ends the conversation: the peer's requests in flight are
// cancelled, calls waiting fail, what is queued is written (within the
// write timeout), then the streams are closed where they can be. It waits
// for every goroutine it started, but no longer than a moment for one
// blocked on a stream that cannot be interrupted.
func (c *Conn) Close() error {
	c.Start() // so that the goroutines Close waits for exist
	defer c.workers.Stop()
	c.inflight.Stop()
	c.finish(ErrClosed)
	c.cancel()
	c.inflight.CancelAll()
	c.inflight.Wait(context.Background())
	c.out.Close()
	select {
	case <-c.writeDone:
	case <-time.After(c.opts.WriteTimeout):
		c.fail(ErrWriteTimeout)
	}
	c.closeOnce.Do(func() { close(c.stopWrite) })
	if cl, ok := c.w.(io.Closer); ok {
		_ = cl.Close()
	}
	if cl, ok := c.r.(io.Closer); ok {
		_ = cl.Close()
	}
	for _, ch := range []chan struct{}{c.writeDone, c.readDone} {
		select {
		case <-ch:
		case <-time.After(closeWait):
		}
	}
	return nil
}
