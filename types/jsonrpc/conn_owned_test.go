package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A handler that panics answers its request -32603; the panic and its
// stack reach Panicked; the Conn goes on, and so does another Conn.
func TestConnPanicBoundary(t *testing.T) {
	type report struct {
		method string
		v      any
		stack  string
	}
	reports := make(chan report, 10)
	opts := ConnOptions{
		Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
			if m.Method == "boom" {
				panic("kaboom")
			}
			return json.RawMessage(`{"ok":true}`), nil
		},
		Panicked: func(method string, v any, stack []byte) { reports <- report{method, v, string(stack)} },
	}
	_, p1 := newPair(t, opts)
	_, p2 := newPair(t, opts)
	p1.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}`)
	if got := p1.recv(); got != `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}` {
		t.Errorf("answer to a panicking request: %s", got)
	}
	r := <-reports
	if r.method != "boom" || r.v != "kaboom" || !strings.Contains(r.stack, "TestConnPanicBoundary") {
		t.Errorf("reported %q %v, stack:\n%s", r.method, r.v, r.stack)
	}
	p1.send(`{"jsonrpc":"2.0","id":2,"method":"fine"}`)
	if got := p1.recv(); got != `{"jsonrpc":"2.0","id":2,"result":{"ok":true}}` {
		t.Errorf("the same Conn after a panic: %s", got)
	}
	p2.send(`{"jsonrpc":"2.0","id":3,"method":"fine"}`)
	if got := p2.recv(); got != `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}` {
		t.Errorf("another Conn after a panic: %s", got)
	}
}

// A Notify that panics is reported, and the reader goes on.
func TestConnPanicInNotify(t *testing.T) {
	reports := make(chan string, 1)
	_, p := newPair(t, ConnOptions{
		Notify:   func(m *Message) { panic(m.Method) },
		Panicked: func(method string, v any, stack []byte) { reports <- method },
	})
	p.send(`{"jsonrpc":"2.0","method":"notifications/x"}`)
	if got := <-reports; got != "notifications/x" {
		t.Errorf("reported %q", got)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if got := p.recv(); !strings.Contains(got, `"id":1,"error":{"code":-32601`) {
		t.Errorf("after the panic: %s", got)
	}
}

// A call whose request is blocked in a write (a peer that stopped
// reading, a 100 KB argument) returns at its ctx's deadline, not at the
// write timeout; the write goes on, and ends the connection at the write
// timeout.
func TestConnCallBlockedInWriteEndsAtCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe() // b never reads
		defer b.Close()
		c := NewConn(NewLineStream(a, a, 0), ConnOptions{WriteTimeout: 10 * time.Second})
		c.Start()
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Call(ctx, "tools/call", json.RawMessage(`{"text":"`+strings.Repeat("a", 100<<10)+`"}`))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 200*time.Millisecond {
			t.Errorf("Call returned %v after %v; want the ctx's deadline after 200ms", err, time.Since(start))
		}
		<-c.Done()
		if !errors.Is(c.Err(), ErrWriteTimeout) || time.Since(start) != 10*time.Second {
			t.Errorf("the connection ended with %v after %v; want the write timeout after 10s", c.Err(), time.Since(start))
		}
	})
}

// A CallError from the stream fails the call it names with its error, and
// reading goes on; a TooLargeError that knows its id fails that call.
func TestConnCallErrorFromStream(t *testing.T) {
	s := newChanStream()
	c := NewConn(s, ConnOptions{})
	c.Start()
	defer c.Close()
	call := func() chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := c.Call(t.Context(), "x", nil)
			errc <- err
		}()
		return errc
	}
	errUnauthorized := errors.New("401 Unauthorized")
	errc := call()
	id := s.request(t)
	s.in <- readResult{err: &CallError{ID: id, Err: errUnauthorized}}
	if err := <-errc; !errors.Is(err, errUnauthorized) {
		t.Errorf("call failed with %v", err)
	}
	errc = call()
	id = s.request(t)
	s.in <- readResult{err: &TooLargeError{Size: 20 << 20, Limit: 10 << 20, ID: id}}
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("call failed with %v", err)
	}
	errc = call()
	id = s.request(t)
	s.in <- readResult{msg: []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)}
	if err := <-errc; err != nil {
		t.Errorf("the call after a CallError: %v", err)
	}
}

type readResult struct {
	msg []byte
	err error
}

// chanStream is a Stream a test feeds by hand.
type chanStream struct {
	in        chan readResult
	out       chan []byte
	closed    chan struct{}
	closeOnce sync.Once
}

func newChanStream() *chanStream {
	return &chanStream{in: make(chan readResult), out: make(chan []byte, 10), closed: make(chan struct{})}
}

func (s *chanStream) Read() ([]byte, error) {
	select {
	case r := <-s.in:
		return r.msg, r.err
	case <-s.closed:
		return nil, errors.New("closed")
	}
}

func (s *chanStream) Write(ctx context.Context, msg []byte) error {
	select {
	case s.out <- msg:
		return nil
	case <-s.closed:
		return errors.New("closed")
	}
}

func (s *chanStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// request is the id of the next request written.
func (s *chanStream) request(t *testing.T) json.RawMessage {
	t.Helper()
	m, err := Decode(<-s.out)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// An answer is taken for a call only when its id is the call's exactly:
// the same number written another way, or as a string, is no answer.
func TestCallsMatchIDBytes(t *testing.T) {
	calls := NewCalls()
	id, _, ch, err := calls.StartRequest("m", nil)
	if err != nil || string(id) != "1" {
		t.Fatal(id, err)
	}
	for _, other := range []string{`"1"`, `01`, `1.0`, `1e0`, `-1`, `+1`, ``, `10`} {
		if calls.Resolve(&Message{ID: json.RawMessage(other)}) {
			t.Errorf("id %s taken as the answer to call 1", other)
		}
	}
	if !calls.Resolve(&Message{ID: json.RawMessage(`1`), Result: json.RawMessage(`{}`)}) || (<-ch).Result == nil {
		t.Error("the answer to call 1 was not taken")
	}
}

// A stream that panics in Read or Write ends its Conn, reported to
// Panicked, and nothing else: a handler whose answer's write panicked
// ends, so Close does not wait for it.
func TestConnStreamPanicEndsOnlyItsConn(t *testing.T) {
	for _, where := range []string{"read", "write", "answer"} {
		t.Run(where, func(t *testing.T) {
			answer := where == "answer"
			if answer {
				where = "write"
			}
			s := &panickyStream{chanStream: newChanStream(), where: where}
			reported := make(chan any, 2)
			c := NewConn(s, ConnOptions{Panicked: func(_ string, v any, _ []byte) { reported <- v }})
			c.Start()
			defer c.Close()
			if answer { // written by the handler's goroutine
				s.in <- readResult{msg: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)}
			} else {
				_ = c.Notify("n", nil) // to the writer
			}
			if v := <-reported; v != where {
				t.Errorf("reported %v", v)
			}
			<-c.Done()
			if !errors.Is(c.Err(), ErrClosed) && !errors.Is(c.Err(), ErrWrite) {
				t.Errorf("ended with %v", c.Err())
			}
		})
	}
}

type panickyStream struct {
	*chanStream
	where string
}

func (s *panickyStream) Read() ([]byte, error) {
	if s.where == "read" {
		panic("read")
	}
	return s.chanStream.Read()
}

func (s *panickyStream) Write(ctx context.Context, msg []byte) error {
	if s.where == "write" {
		panic("write")
	}
	return s.chanStream.Write(ctx, msg)
}
