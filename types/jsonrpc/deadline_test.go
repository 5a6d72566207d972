package jsonrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call past its deadline (CallSentBy) ends as one whose context's
// deadline passed: context.DeadlineExceeded, the peer told with
// notifications/cancelled, and its late answer refused as ErrLateAnswer.
// The call with a later deadline, sent before and after it, is answered:
// the one timer of the table ends only the calls due.
func TestCallSentByDeadline(t *testing.T) {
	refused := make(chan error, 4)
	c, p := newPair(t, ConnOptions{Refused: func(err error, _ []byte) { refused <- err }})
	type result struct {
		res string
		err error
	}
	call := func(deadline time.Time) chan result {
		done := make(chan result, 1)
		go func() {
			res, err := c.CallSentBy(t.Context(), deadline, "tools/call", nil, nil)
			done <- result{string(res), err}
		}()
		return done
	}
	later := call(time.Now().Add(time.Hour))
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` {
		t.Fatalf("request %s", got)
	}
	due := call(time.Now().Add(50 * time.Millisecond))
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":2,"method":"tools/call"}` {
		t.Fatalf("request %s", got)
	}
	if r := <-due; r.err != context.DeadlineExceeded {
		t.Fatalf("the call past its deadline: %q, %v", r.res, r.err)
	}
	if got := p.recv(); got != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"context deadline exceeded","requestId":2}}` {
		t.Errorf("the peer told %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"late"}}`)
	select {
	case err := <-refused:
		if !errors.Is(err, ErrLateAnswer) {
			t.Errorf("the late answer refused with %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the late answer not refused")
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)
	if r := <-later; r.err != nil || r.res != `{"ok":true}` {
		t.Errorf("the call of the later deadline: %q, %v", r.res, r.err)
	}
	// A call with no deadline after them is not ended by the timer.
	none := call(time.Time{})
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":3,"method":"tools/call"}` {
		t.Fatalf("request %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"result":{}}`)
	if r := <-none; r.err != nil {
		t.Errorf("the call of no deadline: %v", r.err)
	}
}

// A call whose context is cancelled before its deadline ends with
// context.Canceled, as before.
func TestCallSentByCancelled(t *testing.T) {
	c, p := newPair(t, ConnOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallSentBy(ctx, time.Now().Add(time.Hour), "tools/call", nil, nil)
		done <- err
	}()
	p.recv()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("call: %v", err)
	}
	if got := p.recv(); got != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"context canceled","requestId":1}}` {
		t.Errorf("the peer told %s", got)
	}
}

// An initialize whose context ends is not cancelled: MCP says a client
// must not cancel it (the connection is closed instead). The peer gets
// no notifications/cancelled; the next thing it reads is the next request.
func TestInitializeNotCancelled(t *testing.T) {
	c, p := newPair(t, ConnOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "initialize", nil)
		done <- err
	}()
	p.recv()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("initialize: %v", err)
	}
	go func() { _, _ = c.Call(t.Context(), "ping", nil) }()
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":2,"method":"ping"}` {
		t.Errorf("after the initialize given up the peer read %s", got)
	}
}
