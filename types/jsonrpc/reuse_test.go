package jsonrpc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// holdStream holds the first write until release is closed, and tells of
// it on writing; the test feeds Read through in, unbuffered, so that a
// send completes only once the reader has taken the message.
type holdStream struct {
	in       chan []byte
	out      chan []byte
	writing  chan struct{}
	release  chan struct{}
	closed   chan struct{}
	first    sync.Once
	closeOne sync.Once
}

func (s *holdStream) Read() ([]byte, error) {
	select {
	case b := <-s.in:
		return b, nil
	case <-s.closed:
		return nil, ErrClosed
	}
}

func (s *holdStream) Write(_ context.Context, msg []byte) error {
	s.first.Do(func() {
		close(s.writing)
		<-s.release
	})
	s.out <- append([]byte(nil), msg...)
	return nil
}

func (s *holdStream) Close() error {
	s.closeOne.Do(func() { close(s.closed) })
	return nil
}

// A peer may reuse an id once it has the answer to the request that used
// it: the id is free before its answer goes out, so a peer that sends the
// next request with it the moment it reads the answer is never told the
// id is still in use.
func TestConnIDFreeOnceAnswered(t *testing.T) {
	s := &holdStream{in: make(chan []byte), out: make(chan []byte, 4), writing: make(chan struct{}),
		release: make(chan struct{}), closed: make(chan struct{})}
	c := NewConn(s, ConnOptions{Handle: func(context.Context, *Message) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}})
	c.Start()
	defer c.Close()
	s.in <- []byte(`{"jsonrpc":"2.0","id":"state","method":"x"}`)
	<-s.writing // its answer is on its way to the peer, which has it now
	s.in <- []byte(`{"jsonrpc":"2.0","id":"state","method":"x"}`)
	s.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/x"}`) // the reader is done with the second
	close(s.release)
	for i := range 2 {
		if got := string(<-s.out); !strings.Contains(got, `"result":{"ok":true}`) {
			t.Errorf("answer %d: %s", i+1, got)
		}
	}
}
