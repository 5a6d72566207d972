package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
)

// routeStream is a Router that records each write with its Relation;
// the test feeds Read through in.
type routeStream struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once
	writes chan routed
}

type routed struct {
	msg string
	rel Relation
}

func newRouteStream() *routeStream {
	return &routeStream{in: make(chan []byte), closed: make(chan struct{}), writes: make(chan routed, 16)}
}

func (s *routeStream) Routes() bool { return true }

func (s *routeStream) Read() ([]byte, error) {
	select {
	case b := <-s.in:
		return b, nil
	case <-s.closed:
		return nil, io.EOF
	}
}

func (s *routeStream) Write(ctx context.Context, msg []byte) error {
	s.writes <- routed{string(msg), RelationOf(ctx)}
	return nil
}

func (s *routeStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *routeStream) next(t *testing.T) routed {
	t.Helper()
	return <-s.writes
}

// Over a Router, what a handler sends with its ctx relates to its
// request, its answer says which request it answers, and what is sent
// outside any handler relates to none.
func TestConnRoutesByRelation(t *testing.T) {
	s := newRouteStream()
	var c *Conn
	c = NewConn(s, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		if err := c.NotifyRawContext(ctx, EncodeNotification("notifications/progress", nil)); err != nil {
			return nil, err
		}
		return c.Call(ctx, "elicitation/create", nil)
	}})
	c.Start()
	t.Cleanup(func() { c.Close() })

	s.in <- []byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`)
	if w := s.next(t); string(w.rel.ID) != `"a"` || !w.rel.Notification || w.rel.Answer {
		t.Errorf("progress written with %+v", w.rel)
	}
	w := s.next(t)
	if string(w.rel.ID) != `"a"` || w.rel.Notification || w.rel.Answer {
		t.Errorf("the handler's request written with %+v", w.rel)
	}
	go func() {
		s.in <- []byte(`{"jsonrpc":"2.0","id":` + string(IDOf([]byte(w.msg))) + `,"result":{"ok":1}}`)
	}()
	w = s.next(t)
	if string(w.rel.ID) != `"a"` || !w.rel.Answer || w.msg != `{"jsonrpc":"2.0","id":"a","result":{"ok":1}}` {
		t.Errorf("answer %s written with %+v", w.msg, w.rel)
	}

	if err := c.Notify("notifications/tools/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	if w := s.next(t); w.rel.ID != nil || !w.rel.Notification {
		t.Errorf("a notification of no request written with %+v", w.rel)
	}
}

// Over a Router, a request the peer cancels ends with a nil write that
// names it, so that the stream can close what waits for its answer.
func TestConnRouterHearsOfUnansweredRequest(t *testing.T) {
	s := newRouteStream()
	started := make(chan struct{})
	c := NewConn(s, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	c.Start()
	t.Cleanup(func() { c.Close() })

	s.in <- []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`)
	<-started
	s.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	if w := s.next(t); w.msg != "" || string(w.rel.ID) != "7" || !w.rel.Answer {
		t.Errorf("cancelled request: wrote %q with %+v", w.msg, w.rel)
	}
}

// A refusal relates to the request it refuses.
func TestConnRouterRefusalRelates(t *testing.T) {
	s := newRouteStream()
	hold := make(chan struct{})
	c := NewConn(s, ConnOptions{MaxInflight: 1, Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		<-hold
		return nil, nil
	}})
	c.Start()
	t.Cleanup(func() { close(hold); c.Close() })

	s.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`)
	s.in <- []byte(`{"jsonrpc":"2.0","id":2,"method":"b"}`)
	if w := s.next(t); string(w.rel.ID) != "2" || !w.rel.Answer || string(IDOf([]byte(w.msg))) != "2" {
		t.Errorf("refusal %s written with %+v", w.msg, w.rel)
	}
}
