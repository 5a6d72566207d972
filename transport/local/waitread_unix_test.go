//go:build unix

package local

import (
	"io"
	"os"
	"runtime"
	"testing"
	"time"
)

// A passed stdin read through WaitingReader gives what the client wrote,
// whether it was there before the read or came while the read waited, and
// io.EOF once the client closed its end.
func TestWaitingReaderReads(t *testing.T) {
	r, w, err := os.Pipe() // non-blocking, as ReceiveFiles makes what it is passed
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wr := WaitingReader(r)
	defer wr.Close()
	buf := make([]byte, 64)
	if _, err := w.WriteString("first\n"); err != nil {
		t.Fatal(err)
	}
	if n, err := wr.Read(buf); err != nil || string(buf[:n]) != "first\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	type result struct {
		s   string
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := wr.Read(buf)
		got <- result{string(buf[:n]), err}
	}()
	if _, err := w.WriteString("second\n"); err != nil {
		t.Fatal(err)
	}
	if res := <-got; res.err != nil || res.s != "second\n" {
		t.Fatalf("read %q, %v", res.s, res.err)
	}
	w.Close()
	if n, err := wr.Read(buf); err != io.EOF {
		t.Fatalf("read %q, %v after the writer closed, want io.EOF", buf[:n], err)
	}
}

// Close ends a read that waits for input that never comes: the session
// of a bridge that went away ends, its reader with it.
func TestWaitingReaderCloseEndsARead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wr := WaitingReader(r)
	ended := make(chan error, 1)
	go func() {
		_, err := wr.Read(make([]byte, 64))
		ended <- err
	}()
	// The read may not have begun yet: Close ends it either way.
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a read of a closed reader succeeded")
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("Close did not end the read")
	}
}

// On one processor, where a read that finds nothing leaves the wait to
// the poller at once, what comes later is read as before.
func TestWaitingReaderOnOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wr := WaitingReader(r)
	defer wr.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := wr.Read(buf)
		got <- string(buf[:n])
	}()
	if _, err := w.WriteString("late\n"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "late\n" {
		t.Fatalf("read %q", s)
	}
}
