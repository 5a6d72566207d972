package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// inlineFor is how long the goroutine holding the turn at reading may
// answer a request before the turn passes to another: a request answered
// within it costs no hand-off at all, one that takes longer delays the
// next message (a cancellation, another request) by at most this much.
const inlineFor = 200 * time.Microsecond

// readTurn is a turn at reading: the goroutine reads until a request is
// admitted and answers it itself (net/http's and go-sdk's way: the
// request starts at once, on the goroutine that read it, instead of
// waiting for another to wake up), still holding the turn, and reads on
// once it has answered. A request that takes longer than inlineFor has
// the turn handed on to an idle worker (handTurnOn), and this goroutine
// ends once it has answered. Waking a worker for every request, to read
// what usually is not there yet, cost a fast upstream's call a quarter of
// its time through the hub (issue 33). Reading passes from one goroutine
// to the next, never two at once, so messages are still taken in order.
func (c *Conn) readTurn() {
	defer func() {
		// Serving panicked (a stream's bug): reading goes on elsewhere.
		if c.inline.CompareAndSwap(true, false) {
			c.workers.Go(c.turn)
		}
	}()
	for {
		ctx, m, a := c.read()
		if m == nil {
			return
		}
		c.inlineAt.Store(time.Now().UnixNano())
		c.inline.Store(true)
		c.armTurnTimer()
		c.serve(ctx, m, a)
		if !c.inline.CompareAndSwap(true, false) {
			return // handTurnOn passed reading on
		}
	}
}

// armTurnTimer arms the timer that watches requests answered inline,
// unless it is armed already: one timer for a run of requests, not one
// each, since arming a timer wakes a thread of the runtime's.
func (c *Conn) armTurnTimer() {
	if c.armed.CompareAndSwap(false, true) {
		c.itimer.Reset(inlineFor)
	}
}

// handTurnOn is the timer's: it passes the turn at reading to another
// worker when the request answered inline has taken inlineFor, waits the
// rest for one that has not, and disarms when none is answered inline.
func (c *Conn) handTurnOn() {
	if c.inline.Load() {
		if left := inlineFor - time.Duration(time.Now().UnixNano()-c.inlineAt.Load()); left > 0 {
			c.itimer.Reset(left)
			return
		}
		if c.inline.CompareAndSwap(true, false) {
			c.workers.Go(c.turn)
		}
	}
	c.armed.Store(false)
	if c.inline.Load() { // one began as the timer was disarming
		c.armTurnTimer()
	}
}

// read reads the stream, dispatching each message, until a request is
// admitted (returned, for the caller to answer with the turn) or the
// stream ends (nil).
// It never writes: what it answers itself is queued for the writer.
func (c *Conn) read() (ctx context.Context, m *Message, a admitted) {
	defer func() {
		if v := recover(); v != nil { // a bug in a stream: the conversation cannot go on
			c.panicked("", v, debug.Stack())
			c.fail(fmt.Errorf("%w: reading panicked: %v", ErrClosed, v))
			close(c.readDone)
			m = nil
		}
	}()
	for {
		msg, decoded, err := c.readMessage()
		if err == nil {
			ctx, m, a := c.receive(msg, decoded)
			switch {
			case m == nil:
			case c.buffered != nil && c.buffered.moreBuffered():
				// More is already here: reading goes on at once on this
				// goroutine, and a worker answers.
				c.workers.Go(func() { c.serve(ctx, m, a) })
			default:
				return ctx, m, a
			}
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
			close(c.readDone)
			return nil, nil, admitted{}
		}
	}
}

// Take takes one message of the peer that the stream's owner read and
// decoded itself (m, from Decode), on the calling goroutine, as the
// reader takes one it read: an answer resolves its call, a notification
// goes to Notify (notifications/cancelled acted on first) before Take
// returns, a request refused is answered through the writer. A request
// admitted is returned as serve, for the caller to run on its own
// goroutine: it answers the request, its answer written through the
// stream (with its Relation) unless a message waits before it, and
// returns once it has. ok is false, and nothing taken, once the
// connection is done.
//
// It is for a Router whose messages each come on a goroutine of their
// own, in no order among them but the one their sender waits for (the
// POSTs of an HTTP session): the request is answered on the goroutine
// that read it, with its answer handed back on that goroutine, instead
// of a hand-off to the reader and another back, which cost about a
// tenth of an HTTP call's CPU (issue 33).
func (c *Conn) Take(m *Message) (serve func(), ok bool) {
	select {
	case <-c.done:
		return nil, false
	default:
	}
	ctx, req, a := c.receive(m.Raw, m)
	if req == nil {
		return nil, true
	}
	return func() { c.serve(ctx, req, a) }, true
}

// serve answers a request the reader admitted (a).
func (c *Conn) serve(ctx context.Context, m *Message, a admitted) {
	res, err := c.handle(ctx, m)
	rel := Relation{ID: m.ID, Answer: true}
	if !c.answer(a, rel, res, err) && c.routes {
		_ = c.send(nil, rel) // the router closes what it kept for the answer
	}
}

// answer sends the answer to the request a admitted, unless the peer
// cancelled it, and ends it; it reports whether it sent the answer.
func (c *Conn) answer(a admitted, rel Relation, res json.RawMessage, err error) (wanted bool) {
	defer c.unhold(a.held, a.more) // the answer is written, the handler has returned: the body is dropped
	wanted = c.inflight.ending(a.r)
	if wanted {
		_ = c.send(Answer(rel.ID, res, err), rel)
	}
	c.inflight.ended(a.r)
	return wanted
}

// admitted is what receive took for a request it admitted, which serve
// gives back once the request is answered: its place among those in
// flight (Inflight.begin) and the bytes it holds (hold).
type admitted struct {
	r    *inflightReq
	held int64
	more func()
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

// readMessage reads the next message, and the stream's decoding of it
// where it has one (MessageReader).
func (c *Conn) readMessage() ([]byte, *Message, error) {
	if c.decoded != nil {
		return c.decoded.ReadMessage()
	}
	msg, err := c.s.Read()
	return msg, nil, err
}

// receive takes one message, decoding it unless the stream did (m): an
// answer resolves its call, a notification goes to Notify, a request
// admitted is returned for the caller to serve.
func (c *Conn) receive(msg []byte, m *Message) (context.Context, *Message, admitted) {
	var err error
	if m == nil {
		m, err = Decode(msg)
	}
	if err != nil {
		c.refused(err, msg)
		var de *DecodeError
		errors.As(err, &de)
		c.refuse(de.ID, fmt.Errorf("sent a message that is %w", de.Err), ToError(err))
		return nil, nil, admitted{}
	}
	switch {
	case m.IsResponse():
		switch {
		case c.calls.Resolve(m):
		case c.calls.Abandoned(m.ID):
			if m.Error != nil {
				c.refused(fmt.Errorf("%w: %s", ErrLateAnswer, clip.EchoText(m.Error.Message)), msg)
			}
		case m.Error != nil:
			c.refused(fmt.Errorf("the peer sent an error about no request of ours: %s", clip.EchoText(m.Error.Message)), msg)
		}
	case m.IsNotification():
		// One at a time, in the order taken: the reader and Take's
		// callers alike.
		c.nmu.Lock()
		if m.Method == "notifications/cancelled" {
			c.inflight.Cancel(m.Params)
		}
		c.notified(m)
		c.nmu.Unlock()
	default:
		c.out.WaitRoom(c.opts.MaxInflight, c.done) // answers not yet read count against the limit
		// The id goes where the request is kept (its ctx, the Relation of
		// its answer and what a Router keeps for it): a copy, so that
		// none of them holds the body it came in (STYLE 17).
		m.ID = bytes.Clone(m.ID)
		held, more, refuse := c.hold(int64(len(msg)))
		if refuse != nil {
			c.reply(m.ID, nil, refuse)
			return nil, nil, admitted{}
		}
		r, refuse := c.inflight.begin(m.ID, c.routes)
		if refuse != nil {
			c.unhold(held, more)
			c.reply(m.ID, nil, refuse)
			return nil, nil, admitted{}
		}
		return r, m, admitted{r: r, held: held, more: more}
	}
	return nil, nil, admitted{}
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
	_ = c.out.SendRelated(Answer(id, result, err), Relation{ID: id, Answer: true})
}
