package jsonrpc

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// write is the writer: it writes what waits in the outbox, all of it in
// one go where the stream can, until the outbox is closed and empty or the
// connection fails.
func (c *Conn) write() {
	defer close(c.writeDone)
	for {
		if c.out.Closed() && c.out.Len() == 0 {
			return // Close's signal may have been taken by the last batch
		}
		select {
		case <-c.out.Ready():
		case <-c.stopWrite:
			return
		}
		if c.coalescing() {
			// What the goroutines ready to run are about to send goes
			// in this write too (see coalesce).
			runtime.Gosched()
		}
		c.wmu.Lock()
		batch, rels := c.out.TakeRelated()
		if len(batch) == 0 {
			c.wmu.Unlock()
			if c.out.Closed() {
				return
			}
			continue
		}
		err := c.writeTimed(rels, batch...)
		c.wmu.Unlock()
		if err != nil {
			return
		}
		c.out.Recycle(batch, rels)
	}
}

// send sends a message that must not be lost. When nothing waits before
// it and no write is under way it is written at once, on the calling
// goroutine (a handler, which may wait on the peer anyway; never the
// reader), saving the hand-off to the writer; else it is queued. Over a
// Router, whose writes are quick, it waits for a write under way: at many
// requests in flight the answers would otherwise queue for the writer,
// a hand-off each.
func (c *Conn) send(msg []byte, rel Relation) error {
	if c.coalesce(c.inflight.Len()) {
		return c.out.SendRelated(msg, rel)
	}
	if c.routes {
		c.wmu.Lock()
	}
	if c.routes || c.wmu.TryLock() {
		if c.out.Len() == 0 && !c.out.Closed() {
			var rels []Relation
			if c.routes {
				rels = []Relation{rel}
			}
			c.one[0] = msg // not a slice of its own: an allocation a message
			err := c.writeTimed(rels, c.one[:]...)
			c.one[0] = nil
			c.wmu.Unlock()
			if err != nil {
				return c.closedErr(ErrClosed)
			}
			return nil
		}
		c.wmu.Unlock()
	}
	return c.out.SendRelated(msg, rel)
}

// tryWrite writes msg at once, on the calling goroutine, when nothing
// waits before it and the stream can take it without waiting for the
// peer; else it writes nothing and reports false.
func (c *Conn) tryWrite(msg []byte) bool {
	if c.try == nil || c.coalesce(c.calls.Pending()) || !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	if c.out.Len() != 0 || c.out.Closed() {
		return false
	}
	ok, err := c.try.TryWrite(msg)
	if err != nil {
		c.fail(fmt.Errorf("%w: %w", ErrWrite, err))
	}
	return ok
}

// coalescing reports whether the writer waits for the goroutines ready
// to run before it takes what waits: on one processor, where they run
// only once it has yielded, and over a stream that writes several
// messages at once.
func (c *Conn) coalescing() bool {
	return c.batch != nil && runtime.GOMAXPROCS(0) == 1
}

// coalesce reports whether a message is left to the writer instead of
// written by its sender, since others are about to be sent with it:
// pending (this message's among them) is how many of its kind are under
// way, the peer's requests being answered or our calls waiting for their
// answer. At 32 calls in flight on one processor, the answers an
// upstream sent in one read each came out in a write of its own; the
// writer, which yields first, writes those sent meanwhile in one (a
// hand-off to it, on one processor, wakes no thread). A message sent
// alone is written at once.
func (c *Conn) coalesce(pending int) bool {
	return pending > 1 && c.coalescing()
}

// writeTimed writes msgs within the write timeout. At the timeout the
// connection fails, which closes the stream, so that a write blocked on a
// stream without deadlines of its own ends too. A failed write ends the
// connection. rels are the msgs' Relations, for a Router (nil
// otherwise). c.wmu is held.
func (c *Conn) writeTimed(rels []Relation, msgs ...[]byte) error {
	c.wctx.deadline.Store(time.Now().Add(c.opts.WriteTimeout).UnixNano())
	if !c.bounded {
		c.wtimer.Reset(c.opts.WriteTimeout)
	}
	err := c.writeStream(rels, msgs)
	if !c.bounded && !c.wtimer.Disarm() {
		err = ErrWriteTimeout
	}
	if err != nil {
		if !errors.Is(err, ErrWrite) {
			err = fmt.Errorf("%w: %w", ErrWrite, err)
		}
		c.fail(err)
	}
	return err
}

// writeStream writes msgs to the stream; a stream that panics has failed
// to write them (and is reported), so that its writer, whoever it is,
// goes on to end the connection as for any failed write.
func (c *Conn) writeStream(rels []Relation, msgs [][]byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.panicked("", v, debug.Stack())
			err = fmt.Errorf("the stream panicked: %v", v)
		}
	}()
	if c.batch != nil && len(msgs) > 1 {
		return c.batch.WriteBatch(c.wctx, msgs)
	}
	if c.routes {
		// The Relation holds the id of the peer's request, which may be a
		// slice of that request's whole body: kept past its write it
		// would keep the body until the next message (STYLE 17).
		defer func() { c.wctx.rel = Relation{} }()
	}
	for i, m := range msgs {
		if c.routes {
			c.wctx.rel = rels[i]
		}
		if err := c.s.Write(c.wctx, m); err != nil {
			return err
		}
	}
	return nil
}

// writeTimedOut fails the connection whose write took longer than the
// write timeout; closing the stream ends the write where it can be ended.
func (c *Conn) writeTimedOut() {
	c.fail(ErrWriteTimeout)
	c.wctx.expire()
}
