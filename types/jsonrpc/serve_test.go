package jsonrpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A request handed to Serve is answered on the calling goroutine, its
// answer written by the time Serve returns (no reader or worker woken), against the Conn's cap of
// requests in flight, and cancelled by the peer's notifications/cancelled
// read from the stream like one the reader read.
func TestServeAnswersOnTheCallersGoroutine(t *testing.T) {
	s := newChanStream()
	started := make(chan struct{}, 1)
	c := NewConn(s, ConnOptions{MaxInflight: 1, Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		switch m.Method {
		case "whose":
			return json.RawMessage(`"here"`), nil
		default: // "wait": until cancelled
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}})
	c.Start()
	t.Cleanup(func() { c.Close() })
	request := func(id int, method string) *Message {
		m, err := Decode([]byte(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"` + method + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	if !c.Serve(request(1, "whose")) {
		t.Fatal("Serve refused a request on an open Conn")
	}
	select {
	case out := <-s.out:
		if !strings.Contains(string(out), `"here"`) {
			t.Fatalf("answer: %s", out)
		}
	default:
		t.Fatal("the answer was not written when Serve returned")
	}

	done := make(chan bool, 1)
	go func() { done <- c.Serve(request(2, "wait")) }()
	<-started
	// The cap is 1: a second request is refused busy while 2 runs.
	c.Serve(request(3, "whose"))
	if out := <-s.out; !strings.Contains(string(out), `"id":3`) || !strings.Contains(string(out), "too many requests in flight") {
		t.Fatalf("answer to a request over the cap: %s", out)
	}
	s.in <- readResult{msg: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the peer's notifications/cancelled did not cancel a request being Served")
	}

	c.Close()
	if c.Serve(request(4, "whose")) {
		t.Error("Serve took a request on a closed Conn")
	}
}
