package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// read reads the stream until it ends, dispatching each message.
func (c *Conn) read() {
	defer close(c.readDone)
	for {
		msg, err := c.s.Read()
		if err == nil {
			c.receive(msg)
			continue
		}
		var tooLarge *TooLargeError
		var callErr *CallError
		switch {
		case errors.As(err, &tooLarge):
			c.tooLarge(tooLarge)
		case errors.As(err, &callErr):
			if !c.calls.Fail(callErr.ID, callErr.Err) {
				c.refused(err, nil)
			}
		default:
			c.finish(err)
			return
		}
	}
}

// tooLarge answers a message over the size limit: the call it answers
// fails at once (its id may come last, as the TypeScript SDK writes it),
// a request gets an error.
func (c *Conn) tooLarge(e *TooLargeError) {
	err := fmt.Errorf("sent a message of %d bytes, over the %d byte limit", e.Size, e.Limit)
	c.refused(err, e.Head)
	id := e.ID
	if id == nil {
		id = IDOf(e.Head)
	}
	if id == nil {
		id = IDOfTail(e.Tail)
	}
	if id != nil {
		c.refuse(id, err, Errorf(CodeInvalidRequest, fmt.Sprintf("message of %d bytes is over the %d byte limit", e.Size, e.Limit)))
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
		defer c.recovered("")
		c.opts.Refused(err, msg)
	}
}

func (c *Conn) notified(m *Message) {
	if c.opts.Notify != nil {
		defer c.recovered(m.Method)
		c.opts.Notify(m)
	}
}

func (c *Conn) receive(msg []byte) {
	m, err := Decode(msg)
	if err != nil {
		c.refused(err, msg)
		var de *DecodeError
		errors.As(err, &de)
		c.refuse(de.ID, fmt.Errorf("sent a message that is %w", de.Err), ToError(err))
		return
	}
	switch {
	case m.IsResponse():
		if !c.calls.Resolve(m) && m.Error != nil {
			c.refused(fmt.Errorf("the peer sent an error about no request of ours: %s", m.Error.Message), msg)
		}
	case m.IsNotification():
		if m.Method == "notifications/cancelled" {
			c.inflight.Cancel(m.Params)
		}
		c.notified(m)
	default:
		c.out.WaitRoom(c.opts.MaxInflight, c.done) // answers not yet read count against the limit
		ctx, end, refuse := c.inflight.Begin(c.ctx, m.ID)
		if refuse != nil {
			c.reply(m.ID, nil, refuse)
			return
		}
		c.workers.Go(func() {
			res, err := c.handle(ctx, m)
			end(func() { _ = c.send(Answer(m.ID, res, err)) })
		})
	}
}

// handle runs the Handle option: a panic in it is the request's internal
// error, reported to Panicked.
func (c *Conn) handle(ctx context.Context, m *Message) (res json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.panicked(m.Method, v, debug.Stack())
			res, err = nil, Errorf(CodeInternalError, "internal error")
		}
	}()
	if c.opts.Handle == nil {
		return nil, Errorf(CodeMethodNotFound, "Method not found: "+m.Method)
	}
	return c.opts.Handle(ctx, m)
}

// reply queues the answer to a request, for the writer: the reader
// answers what it refuses this way, never writing itself. While the peer
// is not reading such answers the reader waits, so that a peer sending
// nothing but refused messages cannot grow the queue without bound.
func (c *Conn) reply(id, result json.RawMessage, err error) {
	c.out.WaitRoom(c.opts.MaxInflight, c.done)
	_ = c.out.Send(Answer(id, result, err))
}
