package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TryWrite writes a small message whole to a pipe with room, and nothing
// to a full pipe or for a message too large to be written atomically.
func TestLineStreamTryWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := NewLineStream(r, w, 0)
	defer s.Close()
	tw := s.(TryWriter)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 1000) + `"}`)
	n := 0
	for ; n < 1000; n++ {
		ok, err := tw.TryWrite(msg)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	if n == 0 || n == 1000 {
		t.Fatalf("%d messages tried into a pipe nobody reads", n)
	}
	if ok, err := tw.TryWrite([]byte(strings.Repeat("x", pipeBuf))); ok || err != nil {
		t.Errorf("a message over PIPE_BUF: %v %v", ok, err)
	}
	w.Close()
	br := bufio.NewReader(r)
	for i := range n + 1 {
		line, err := br.ReadString('\n')
		if i == n {
			if err == nil {
				t.Errorf("more than the %d messages tried were written: %.40s", n, line)
			}
			break
		}
		if err != nil || line != string(msg)+"\n" {
			t.Fatalf("message %d read back as %.40q, %v", i, line, err)
		}
	}
}

// Over a pipe whose reader stopped reading, a call with a small request
// returns at its ctx, as a large one does: TryWrite found no room, and the
// writer has it.
func TestConnCallToFullPipeEndsAtCtx(t *testing.T) {
	for _, size := range []int{10, 100 << 10} {
		pr, pw, err := os.Pipe() // the peer's stdin: never read
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		in, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer inW.Close()
		pw.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := pw.Write([]byte(strings.Repeat("\n", 1<<20))); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("filling the pipe: %v", err)
		}
		// The write timeout far beyond the ctx: the call ends by the
		// ctx, well before, however busy the machine.
		c := NewConn(NewLineStream(in, pw, 0), ConnOptions{WriteTimeout: time.Minute})
		c.Start()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		start := time.Now()
		_, err = c.Call(ctx, "tools/call", json.RawMessage(`{"text":"`+strings.Repeat("a", size)+`"}`))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
			t.Errorf("a call of %d bytes returned %v after %v", size, err, time.Since(start))
		}
		pr.Close() // the writer's write fails now, not at its timeout
		c.Close()
	}
}

// A TryWrite after a write whose deadline has passed is not refused by
// that old deadline (it was, and the Conn took the refusal for a failed
// stream and closed an upstream's stdin).
func TestLineStreamTryWriteAfterADeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := NewLineStream(r, w, 0)
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	if err := s.Write(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	// The write's deadline is over, as a cancel leaves it; a deadline of
	// a millisecond could pass before the write itself on a busy machine.
	if err := w.SetWriteDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.(TryWriter).TryWrite([]byte("b")); !ok || err != nil {
		t.Errorf("TryWrite after a deadline: %v, %v", ok, err)
	}
}
