package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"
)

// A message taken with Take is the reader's, on the caller's goroutine: a
// notification reaches Notify before Take returns, a request is answered
// by the serve Take returns, on the goroutine that runs it, its answer
// written with its Relation before serve returns; once the connection is
// closed nothing is taken.
func TestConnTakeServesOnTheCallersGoroutine(t *testing.T) {
	s := newRouteStream()
	notified := make(chan string, 1)
	var handlerGoroutine, callerGoroutine uint64
	c := NewConn(s, ConnOptions{
		Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
			handlerGoroutine = goroutineID()
			return json.RawMessage(`{"ok":true}`), nil
		},
		Notify: func(m *Message) { notified <- m.Method },
	})
	c.Start()
	t.Cleanup(func() { c.Close() })

	take := func(raw string) (func(), bool) {
		t.Helper()
		m, err := Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return c.Take(m)
	}
	if serve, ok := take(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); serve != nil || !ok {
		t.Fatalf("a notification: serve %v, ok %v", serve != nil, ok)
	}
	select {
	case m := <-notified:
		if m != "notifications/initialized" {
			t.Errorf("notified %s", m)
		}
	default:
		t.Error("Take returned before Notify had the notification")
	}

	serve, ok := take(`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`)
	if serve == nil || !ok {
		t.Fatalf("a request: serve %v, ok %v", serve != nil, ok)
	}
	callerGoroutine = goroutineID()
	serve()
	if handlerGoroutine != callerGoroutine {
		t.Errorf("answered on goroutine %d, not the caller's %d", handlerGoroutine, callerGoroutine)
	}
	select {
	case w := <-s.writes:
		if string(w.rel.ID) != `"a"` || !w.rel.Answer || w.msg != `{"jsonrpc":"2.0","id":"a","result":{"ok":true}}` {
			t.Errorf("answer %s written with %+v", w.msg, w.rel)
		}
	default:
		t.Error("serve returned before the answer was written")
	}
	if n := c.Inflight(); n != 0 {
		t.Errorf("%d in flight after the answer", n)
	}

	c.Close()
	if serve, ok := take(`{"jsonrpc":"2.0","id":"b","method":"tools/call"}`); serve != nil || ok {
		t.Errorf("after Close: serve %v, ok %v", serve != nil, ok)
	}
}

// goroutineID is the calling goroutine's number, from its stack's first
// line ("goroutine N [running]:").
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	n, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return n
}
