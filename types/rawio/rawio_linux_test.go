package rawio

import (
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A pipe the poller waits on is read and written raw: what was written
// comes out, a read waits for input, the writer's close is io.EOF, a write
// to a full pipe ends at its deadline, and Close ends a read that waits.
func TestFileOverAPipe(t *testing.T) {
	r, w, err := os.Pipe() // polled: os.Pipe's ends are non-blocking
	if err != nil {
		t.Fatal(err)
	}
	rf, wf := NewFile(Own(r)), NewFile(Own(w))
	if !rf.Raw() || !wf.Raw() {
		t.Fatal("the owned ends of os.Pipe are not read and written raw")
	}
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := rf.Read(buf) // waits: nothing written yet
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	if n, err := wf.Write([]byte("hello\n")); err != nil || n != 6 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if s := <-got; s != "hello\n" {
		t.Fatalf("read %q", s)
	}

	// A write larger than the pipe holds ends at the deadline, having
	// written what fit: a deadline long enough for the write to start on
	// a busy machine (at 50 ms it had passed before, at load 50).
	if err := wf.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := wf.Write(make([]byte, 4<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 {
		t.Fatalf("a write to a full pipe = %d, %v, want part of it and os.ErrDeadlineExceeded", n, err)
	}
	_ = wf.SetWriteDeadline(time.Time{})
	if _, err := io.CopyN(io.Discard, rf, int64(n)); err != nil {
		t.Fatal(err)
	}
	wf.Close()
	if n, err := rf.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("read %d, %v after the writer closed, want io.EOF", n, err)
	}
	rf.Close()

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	rf2 := NewFile(Own(r2))
	ended := make(chan error, 1)
	go func() {
		_, err := rf2.Read(make([]byte, 8))
		ended <- err
	}()
	rf2.Close()
	if err := <-ended; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a read ended by Close returned %v, want os.ErrClosed", err)
	}
}

// A polled pipe not marked Own is read by its own methods: another
// process may share its open file description and make it blocking
// again, and a raw read of it then would hold the collector's stop of
// the world until input came. Here it is made blocking as such a holder
// would, and a collection while a read of it waits ends.
func TestFileNotOwned(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rf := NewFile(r)
	if rf.Raw() {
		t.Fatal("a pipe not marked Own is read raw")
	}
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), false) }); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := rf.Read(make([]byte, 8))
		read <- err
	}()
	runtime.Gosched()
	runtime.GC() // would wait for the raw read forever
	w.Write([]byte("x"))
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// A file the poller does not wait on (a regular file) is read and
// written by its own methods.
func TestFileNotPolled(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rf := NewFile(f)
	if rf.Raw() {
		t.Fatal("a regular file is written raw")
	}
	if _, err := rf.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}
