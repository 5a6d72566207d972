package jsonrpc

import (
	"context"
	"encoding/json"
	"testing"
)

// Answer channels are reused (Calls.chans), never one that may still get
// a send: a call given up on keeps its channel, so its late answer, sent
// on it, reaches no later call; a call answered gives its channel back,
// and the next call that takes it gets its own answer only.
func TestCallChannelsCarryOnlyTheirOwnAnswer(t *testing.T) {
	calls := NewCalls()
	answer := func(id json.RawMessage) *Message {
		return &Message{ID: id, Result: json.RawMessage(`"` + string(id) + `"`)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	given, _, givenCh, _ := calls.StartRequest("m", nil)
	if _, err := calls.Wait(ctx, given, givenCh); err != context.Canceled {
		t.Fatalf("a call whose ctx ended: %v", err)
	}
	for range 50 {
		id, _, ch, err := calls.StartRequest("m", nil)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Resolve(answer(given)) {
			t.Error("the late answer to the call given up on was taken")
		}
		if !calls.Resolve(answer(id)) {
			t.Fatalf("call %s not waiting", id)
		}
		if res, err := calls.Wait(context.Background(), id, ch); err != nil || string(res) != `"`+string(id)+`"` {
			t.Fatalf("call %s got %s %v", id, res, err)
		}
	}
	id, _, ch, _ := calls.StartRequest("m", nil)
	calls.Close(ErrClosed)
	if res, err := calls.Wait(context.Background(), id, ch); res != nil || err != ErrClosed {
		t.Errorf("a call when the connection ended: %s %v", res, err)
	}
}

// An answer that had come by the time the caller's ctx ended stands, every
// time (Wait's select would pick one of the two at random); one that had
// not gives ctx's error, and its late answer goes nowhere.
func TestWaitTakesAnAnswerThatCameBeforeTheEnd(t *testing.T) {
	calls := NewCalls()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		id, _, ch, err := calls.StartRequest("m", nil)
		if err != nil {
			t.Fatal(err)
		}
		calls.Resolve(&Message{ID: id, Result: json.RawMessage(`1`)})
		if res, err := calls.Wait(ended, id, ch); err != nil || string(res) != "1" {
			t.Fatalf("an answer that came before ctx ended: %s %v", res, err)
		}
	}
	id, _, ch, _ := calls.StartRequest("m", nil)
	if _, err := calls.Wait(ended, id, ch); err != context.Canceled {
		t.Fatalf("no answer before ctx ended: %v", err)
	}
	if calls.Resolve(&Message{ID: id, Result: json.RawMessage(`1`)}) {
		t.Error("the late answer was taken")
	}
}
