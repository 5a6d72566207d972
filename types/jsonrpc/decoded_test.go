package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"testing"
)

// decodedStream is a routeStream whose writer decoded each message
// already (a MessageReader), as the HTTP face does its POST bodies.
type decodedStream struct {
	*routeStream
	decoded chan *Message
}

func (s *decodedStream) ReadMessage() ([]byte, *Message, error) {
	select {
	case m := <-s.decoded:
		// Bytes the Conn could not decode: it must take m as it is.
		return []byte("decoded already"), m, nil
	case <-s.closed:
		return nil, nil, io.EOF
	}
}

func (s *decodedStream) Read() ([]byte, error) {
	raw, _, err := s.ReadMessage()
	return raw, err
}

// A message its stream decoded already is served from that decoding, not
// decoded again from its bytes.
func TestConnTakesAMessageDecodedAlready(t *testing.T) {
	s := &decodedStream{routeStream: newRouteStream(), decoded: make(chan *Message)}
	c := NewConn(s, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		return json.RawMessage(`{"method":"` + m.Method + `"}`), nil
	}})
	c.Start()
	defer c.Close()
	m, err := Decode([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	s.decoded <- m
	if got, want := s.next(t).msg, `{"jsonrpc":"2.0","id":3,"result":{"method":"tools/list"}}`; got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
}
