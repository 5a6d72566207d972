package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
)

// A Stream carries the whole messages of one conversation, as go-sdk's
// jsonrpc2 connections do: a line stream over stdio, the stream of one
// downstream HTTP session, the stream of one HTTP upstream. A Conn runs
// over any of them, so that admission, answer-once, cancellation and
// error conversion exist once, whatever the framing.
//
// Read is called by one goroutine at a time, Write by one goroutine at a
// time; Close may be called at any time, from any goroutine, more than
// once.
type Stream interface {
	// Read returns the next whole message, its bytes as the peer sent
	// them (surrounding space trimmed). The slice is the caller's.
	//
	// A *TooLargeError means one message was over the size limit and was
	// skipped: reading may go on. Any other error ends the stream; io.EOF
	// means the peer closed it cleanly.
	Read() ([]byte, error)
	// Write sends one whole message (no framing: the stream adds its own).
	// ctx bounds the write: a stream that cannot finish it in time returns
	// an error wrapping ErrWriteTimeout and is not used again. An error
	// ends the conversation.
	Write(ctx context.Context, msg []byte) error
	// Close ends the stream: a Read or Write in progress returns where the
	// stream can interrupt it.
	Close() error
}

// TooLargeError is a message over the size limit, skipped by a Stream's
// Read without being buffered whole. Head and Tail are its first and last
// bytes, kept so that its id can still be found (some peers write the id
// last); ID, when the stream knows it (an HTTP answer to a request it
// posted), is the id of the request it answers.
type TooLargeError struct {
	Size, Limit int
	Head, Tail  []byte
	ID          json.RawMessage
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("a message of %d bytes is over the %d byte limit", e.Size, e.Limit)
}

// CallError is a Read error about one call of ours rather than the whole
// stream: an HTTP stream whose POST of a request failed with a status
// says so with the request's id, so that the call fails with Err (a 401
// recognised by errors.As at the caller) and reading goes on.
type CallError struct {
	ID  json.RawMessage
	Err error
}

func (e *CallError) Error() string { return fmt.Sprintf("call %s: %v", e.ID, e.Err) }

func (e *CallError) Unwrap() error { return e.Err }

// A BatchWriter is a Stream that can write several messages in one go (a
// line stream: one system call for all of them). A Conn's writer hands it
// everything that queued up while the previous write was under way.
type BatchWriter interface {
	// WriteBatch writes msgs in order, as Write would one by one.
	WriteBatch(ctx context.Context, msgs [][]byte) error
}

// A TryWriter is a Stream that can write a message only if it can do so
// at once, whole, without waiting for the peer to read (a small message
// to a pipe with room). A Conn's Call tries it before handing its request
// to the writer: a caller may not wait on a write, since it must return
// when its ctx ends.
type TryWriter interface {
	// TryWrite writes msg and reports true, or writes nothing and reports
	// false. An error ends the stream, as Write's does.
	TryWrite(msg []byte) (bool, error)
}

// A MessageReader is a Stream whose writer may have decoded a message
// already, with Decode (an HTTP face decodes a POST's body to route it):
// ReadMessage returns it with its bytes, so that a Conn does not decode
// it again, or a nil m for the Conn to decode raw as Read's.
type MessageReader interface {
	ReadMessage() (raw []byte, m *Message, err error)
}
