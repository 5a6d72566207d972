package jsonrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An error answer to a call that gave up waiting is told to Refused as
// ErrLateAnswer, once; one to an id the Conn never used, or to the same
// call again, stays an error about no request of ours.
func TestLateAnswerToAbandonedCall(t *testing.T) {
	refused := make(chan error, 4)
	c, p := newPair(t, ConnOptions{Refused: func(err error, _ []byte) { refused <- err }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "server/discover", nil)
		done <- err
	}()
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":1,"method":"server/discover"}` {
		t.Fatalf("request %s", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	p.recv() // notifications/cancelled
	for _, tc := range []struct {
		answer string
		late   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, false}, // answered already
		{`{"jsonrpc":"2.0","id":99,"error":{"code":-32601,"message":"Method not found"}}`, false},
	} {
		p.send(tc.answer)
		select {
		case err := <-refused:
			if errors.Is(err, ErrLateAnswer) != tc.late {
				t.Errorf("%s: refused with %v, late %v", tc.answer, err, tc.late)
			}
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("%s: not refused", tc.answer)
		}
	}
}
