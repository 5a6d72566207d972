package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// peer is the far end of a Conn under test: it reads lines and writes raw.
type peer struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func newPair(t *testing.T, opts ConnOptions) (*Conn, *peer) {
	t.Helper()
	a, b := net.Pipe()
	c := NewConn(NewLineStream(a, a, opts.MaxMessageSize), opts)
	c.Start()
	t.Cleanup(func() { b.Close(); c.Close() })
	return c, &peer{t: t, nc: b, br: bufio.NewReaderSize(b, 1<<20)}
}

func (p *peer) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.nc, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) recv() string {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(await.Slow * 5 * time.Second)) // bounds a hang
	line, err := p.br.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in, method, id, params string
		code                   int
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, method: "ping", id: "1"},
		{in: `{"jsonrpc":"2.0","method":"notifications/x","params":null}`, method: "notifications/x"},
		{in: `{"params":{"a":[1]},"method":"m\u0031","id":"x","jsonrpc":"2.0"}`, method: "m1", id: `"x"`, params: `{"a":[1]}`},
		{in: `{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`, id: "9007199254740993"},
		{in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: CodeInvalidRequest},
		{in: " \n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, method: "ping", id: "1"}, // an HTTP body may begin with space
		{in: `{"jsonrpc":"2.0","id":1,`, code: CodeParseError},
		{in: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, code: CodeInvalidRequest, id: "1"},
		{in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":1,"method":3}`, code: CodeInvalidRequest, id: "1"},
		{in: `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":1,"method":"a","METHOD":"b"}`, code: CodeInvalidRequest, id: "1"},
		{in: `"hello"`, code: CodeInvalidRequest},
	} {
		m, err := Decode([]byte(tc.in))
		if tc.code != 0 {
			var de *DecodeError
			if !errors.As(err, &de) || de.Code != tc.code || string(de.ID) != tc.id {
				t.Errorf("Decode(%s) = %v, want code %d id %q", tc.in, err, tc.code, tc.id)
			}
			continue
		}
		if err != nil || m.Method != tc.method || string(m.ID) != tc.id || string(m.Params) != tc.params {
			t.Errorf("Decode(%s) = %+v, %v", tc.in, m, err)
		}
	}
}

func TestEncodeKeepsBytes(t *testing.T) {
	if _, msg, _, _ := NewCalls().StartRequest("roots/list", json.RawMessage("null")); string(msg) != `{"jsonrpc":"2.0","id":1,"method":"roots/list"}` {
		got := string(msg)
		t.Errorf("null params sent: %s", got)
	}
	e := &Error{Code: 1, Message: "a <b> & c", Data: json.RawMessage(`{"z":1,"a":"<"}`)}
	if got := string(EncodeError(json.RawMessage(`1e2`), e)); got != `{"jsonrpc":"2.0","id":1e2,"error":{"code":1,"message":"a <b> & c","data":{"z":1,"a":"<"}}}` {
		t.Errorf("error re-encoded: %s", got)
	}
}

func TestConnCallAndServe(t *testing.T) {
	c, p := newPair(t, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		if m.Method == "fail" {
			return nil, Errorf(-5, "no")
		}
		return json.RawMessage(`{"echo":` + string(m.Params) + `}`), nil
	}})
	p.send(`{"jsonrpc":"2.0","id":"a","method":"x","params":[1, 2]}`)
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":"a","result":{"echo":[1, 2]}}` {
		t.Errorf("answer %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"fail"}`)
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":2,"error":{"code":-5,"message":"no"}}` {
		t.Errorf("error answer %s", got)
	}
	p.send(`not json`)
	if got := p.recv(); !strings.Contains(got, `"code":-32700`) {
		t.Errorf("parse error answer %s", got)
	}
	done := make(chan error, 1)
	go func() {
		res, err := c.Call(t.Context(), "roots/list", nil)
		if err == nil && string(res) != `{"roots":[]}` {
			err = errors.New("result " + string(res))
		}
		done <- err
	}()
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":1,"method":"roots/list"}` {
		t.Errorf("request %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":7,"result":{}}`) // to nothing: dropped
	p.send(`{"result":{"roots":[]},"jsonrpc":"2.0","id":1}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A reply over the size limit with its id last fails its call at once.
func TestConnOversizeReplyIDLast(t *testing.T) {
	c, p := newPair(t, ConnOptions{MaxMessageSize: 1000})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(t.Context(), "tools/call", nil)
		errc <- err
	}()
	p.recv()
	start := time.Now()
	p.send(`{"result":{"text":"` + strings.Repeat("x", 5000) + `"},"jsonrpc":"2.0","id":1}`)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "over the 1000 byte limit") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(time.Minute): // its ctx has no deadline: without the limit it waits for ever
		t.Fatalf("the call waited on %v", time.Since(start))
	}
}

// A peer that stops reading: notifications are dropped and counted, a call
// fails at its deadline, and the connection ends at the write timeout;
// nothing blocks the sender.
func TestConnPeerStopsReading(t *testing.T) {
	for _, name := range []string{"socket", "pipe"} {
		// In a bubble (testing/synctest): its clock moves only while every
		// goroutine of it waits, so a sender that waited for the stuck
		// write takes the write timeout, and one that does not takes no
		// time at all, however busy the machine.
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var r io.Reader
				var w io.Writer
				if name == "socket" {
					a, b := net.Pipe()
					defer b.Close()
					go io.Copy(io.Discard, io.LimitReader(b, 100)) // reads a little, then stops
					r, w = a, a
				} else {
					pr, pw := io.Pipe() // no deadlines: the timer path
					defer pr.Close()
					in, _ := io.Pipe() // nothing to read; closed by Close
					r, w = in, pw
				}
				const writeTimeout = time.Second
				c := NewConn(NewLineStream(r, w, 0), ConnOptions{WriteTimeout: writeTimeout, Outbox: 10})
				c.Start()
				defer c.Close()
				start := time.Now()
				dropped := 0
				for range 1000 {
					if errors.Is(c.Notify("notifications/message", json.RawMessage(`{"level":"info","data":"`+strings.Repeat("y", 100)+`"}`)), ErrDropped) {
						dropped++
					}
				}
				if time.Since(start) != 0 {
					t.Errorf("1000 notifications took %v", time.Since(start))
				}
				if dropped == 0 || c.Dropped() != uint64(dropped) {
					t.Errorf("dropped %d, counted %d", dropped, c.Dropped())
				}
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer cancel()
				if _, err := c.Call(ctx, "x", nil); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
					t.Errorf("call err = %v", err)
				}
				select {
				case <-c.Done():
					if !errors.Is(c.Err(), ErrWriteTimeout) {
						t.Errorf("done with %v", c.Err())
					}
				case <-time.After(time.Minute): // it never closes without the write timeout
					t.Fatal("connection still open")
				}
				if _, err := c.Call(t.Context(), "x", nil); !errors.Is(err, ErrClosed) {
					t.Errorf("call after the end: %v", err)
				}
			})
		})
	}
}

func TestConnCancelAndLimit(t *testing.T) {
	started := make(chan struct{}, 10)
	c, p := newPair(t, ConnOptions{MaxInflight: 2, Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"slow"}`)
	<-started
	<-started
	p.send(`{"jsonrpc":"2.0","id":3,"method":"slow"}`)
	if got := p.recv(); !strings.Contains(got, `"id":3`) || !strings.Contains(got, `"code":-32000`) {
		t.Errorf("over the limit: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	await.For(t, 30*time.Second, "the cancelled request to count no more as in flight", func() bool { return c.Inflight() == 1 })
	p.send(`{"jsonrpc":"2.0","id":4,"method":"slow"}`)
	<-started // 1 was cancelled, so 4 got its slot, and 1 got no answer
	p.send(`{"jsonrpc":"2.0","id":5,"method":"slow"}`)
	if got := p.recv(); !strings.Contains(got, `"id":5`) {
		t.Errorf("expected the refusal of 5 first (1 gets no answer): %s", got)
	}
}
