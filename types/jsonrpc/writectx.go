package jsonrpc

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// writeCtx is the ctx of a Conn's writes, one per Conn so that a write
// allocates nothing for its deadline: its deadline is the write timeout
// of the write under way, and it is done once a write timed out (the
// connection has then failed and closed its stream).
type writeCtx struct {
	deadline atomic.Int64  // unix nanoseconds: the end of the write under way
	expired  chan struct{} // closed when a write timed out
	once     sync.Once
	routes   bool     // the stream is a Router: Value gives rel
	rel      Relation // the Relation of the message being written
}

func newWriteCtx() *writeCtx { return &writeCtx{expired: make(chan struct{})} }

func (w *writeCtx) Deadline() (time.Time, bool) { return time.Unix(0, w.deadline.Load()), true }
func (w *writeCtx) Done() <-chan struct{}       { return w.expired }

// Value gives the Relation of the message being written, to a Router:
// a pointer to it, which RelationOf copies (a Relation put in an
// interface would be an allocation a write).
func (w *writeCtx) Value(key any) any {
	if w.routes && key == (relationKey{}) {
		return &w.rel
	}
	return nil
}

func (w *writeCtx) Err() error {
	select {
	case <-w.expired:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (w *writeCtx) expire() { w.once.Do(func() { close(w.expired) }) }

// closesStream marks a ctx whose end is the end of the stream: the Conn
// closes the stream when a write times out, so a stream need not watch
// the ctx to end a write blocked past it.
func (w *writeCtx) closesStream() {}

type streamClosingCtx interface{ closesStream() }

// writeBounder is a stream whose writes end at their ctx's deadline by
// themselves (a line stream over a socket or a polled pipe): a Conn
// arms no timer for them.
type writeBounder interface{ boundsWrites() bool }

// moreBuffered is a stream that can tell whether it has read ahead of
// the message it returned last: a Conn's reader then keeps reading
// rather than answering the request itself, so that requests sent
// together are started together.
type moreBuffered interface{ moreBuffered() bool }

// ownedTimer runs f when it fires, on the timer's goroutine, and its Stop
// waits for an f under way: no f runs once Stop has returned.
type ownedTimer struct {
	t *time.Timer
	f func()

	mu      sync.Mutex // guards running and stopped
	idle    sync.Cond  // signalled when running drops to 0
	running int
	stopped bool
}

func newOwnedTimer(f func()) *ownedTimer {
	o := &ownedTimer{f: f}
	o.idle.L = &o.mu
	o.t = time.AfterFunc(math.MaxInt64, o.fire)
	o.t.Stop()
	return o
}

func (o *ownedTimer) fire() {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return
	}
	o.running++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running--
		o.idle.Broadcast()
		o.mu.Unlock()
	}()
	o.f()
}

// Reset arms the timer to fire after d.
func (o *ownedTimer) Reset(d time.Duration) { o.t.Reset(d) }

// Disarm stops the timer and reports whether it had not fired.
func (o *ownedTimer) Disarm() bool { return o.t.Stop() }

// Stop stops the timer for good and waits for an f under way.
func (o *ownedTimer) Stop() {
	o.mu.Lock()
	o.stopped = true
	for o.running > 0 {
		o.idle.Wait()
	}
	o.mu.Unlock()
	o.t.Stop()
}
