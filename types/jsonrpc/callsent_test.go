package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
)

// CallSent tells the caller the id of its request before it goes out.
func TestCallSent(t *testing.T) {
	toConn, fromPeer := io.Pipe()
	fromConn, toPeer := io.Pipe()
	c := NewConn(NewLineStream(toConn, toPeer, 1<<20), ConnOptions{})
	c.Start()
	defer func() {
		fromPeer.Close()
		fromConn.Close()
		c.Close()
	}()
	var sent json.RawMessage
	done := make(chan error, 1)
	go func() {
		_, err := c.CallSent(context.Background(), "x", nil, func(id json.RawMessage) { sent = id })
		done <- err
	}()
	lines := bufio.NewScanner(fromConn)
	if !lines.Scan() {
		t.Fatal(lines.Err())
	}
	id := Field(lines.Bytes(), "id")
	io.WriteString(fromPeer, string(EncodeResult(id, json.RawMessage(`{}`)))+"\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(sent) != string(id) {
		t.Errorf("told %s, the request has id %s", sent, id)
	}
}
