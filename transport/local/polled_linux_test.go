package local

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// A blocking stdin pipe, as a client's os/exec gives the hub, is read
// through the poller by a second open file: what the client writes, then
// io.EOF once it closes its end; the first file stays blocking (the
// client may share it); Close ends a read that waits.
func TestPolledReadsABlockingPipe(t *testing.T) {
	r, w := blockingPipe(t)
	fd := int(r.Fd())
	p := Polled(r)
	if p == r {
		t.Fatal("Polled returned the blocking pipe itself")
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the first file's flags %#x (%v): it is no longer blocking", flags, err)
	}
	if _, err := w.WriteString("first\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "first\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	w.Close()
	if n, err := p.Read(buf); err != io.EOF {
		t.Fatalf("read %q, %v after the writer closed, want io.EOF", buf[:n], err)
	}
	p.Close()

	r2, _ := blockingPipe(t)
	p2 := Polled(r2)
	ended := make(chan error, 1)
	go func() {
		_, err := p2.Read(buf)
		ended <- err
	}()
	p2.Close()
	if err := <-ended; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a read ended by Close returned %v, want os.ErrClosed", err)
	}
}

// blockingPipe is a pipe whose read end is blocking and not polled, as
// the hub's stdin is when os/exec started it.
func blockingPipe(t *testing.T) (r, w *os.File) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// What is not a blocking pipe is returned as it is: a regular file, and a
// pipe the poller reads already.
func TestPolledLeavesOthers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Polled(f) != f {
		t.Error("a regular file was opened again")
	}
	r, w, err := os.Pipe() // polled: os.Pipe's ends are non-blocking
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if Polled(r) != r {
		t.Error("a pipe the poller reads already was opened again")
	}
}

// A blocking stdout pipe is written through the poller by a second open
// file: what the hub writes reaches the client, the first file stays
// blocking (the client may share it), and a write to a full pipe ends at
// its deadline instead of holding a thread.
func TestPolledOutWritesABlockingPipe(t *testing.T) {
	r, w := blockingPipe(t)
	fd := int(w.Fd())
	p := PolledOut(w)
	if p == w {
		t.Fatal("PolledOut returned the blocking pipe itself")
	}
	defer p.Close()
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the first file's flags %#x (%v): it is no longer blocking", flags, err)
	}
	if _, err := p.WriteString("answer\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "answer\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err := p.SetWriteDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(make([]byte, 4<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write to a full pipe returned %v, want os.ErrDeadlineExceeded", err)
	}
}

// OwnPipe opens a pipe again even where the poller reads it already (a
// passed file), as a file of the process's own, read raw, whose flags
// are its own; the pipe stays non-blocking; a regular file is not opened
// again.
func TestOwnPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	p, ok := OwnPipe(r, os.O_RDONLY)
	if !ok || p == r {
		t.Fatal("a polled pipe was not opened again")
	}
	defer p.Close()
	if !rawio.Owned(p) || rawio.Owned(r) {
		t.Errorf("owned: the new file %v, the pipe %v; want true, false", rawio.Owned(p), rawio.Owned(r))
	}
	if flags := fileFlags(t, r); flags&unix.O_NONBLOCK == 0 {
		t.Errorf("the pipe's flags %#x: OwnPipe made it blocking (and ended its deadlines)", flags)
	}
	setFileNonblock(t, r, false)
	if flags := fileFlags(t, p); flags&unix.O_NONBLOCK == 0 {
		t.Fatalf("the new file's flags %#x changed with the pipe's", flags)
	}
	if _, err := w.WriteString("x\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "x\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if g, ok := OwnPipe(f, os.O_RDONLY); ok || g != f {
		t.Error("a regular file was opened again")
	}
}

// fileFlags is f's open file flags, read without f.Fd (which would make
// f blocking).
func fileFlags(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if cerr := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return flags
}

// setFileNonblock sets f's open file non-blocking or blocking, as another
// holder of it may.
func setFileNonblock(t *testing.T, f *os.File, nonblocking bool) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if cerr := rc.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), nonblocking) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
}
