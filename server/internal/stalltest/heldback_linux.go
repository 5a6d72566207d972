package stalltest

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// settle is how long a client's stdin stays full before HeldBack takes
// it that the hub stopped reading it. A hub that has stops for good, so
// it cannot fail one; a hub that only fell behind (a processor shared
// with the client's writer, a busy machine) reads again within it.
const settle = 100 * time.Millisecond

// HeldBack waits until the hub stops reading the client, whose stdin's
// write end is in (its pipe holds what the client wrote and the hub did
// not read, for settle), and fails t if instead the client's writer of
// Calls calls ended (written: the hub took them all), or the heap grew
// by more than limit bytes since Mark and stays so (the calls it took
// may still be on their way through it) until the 5-minute bound. Waiting for the pipe, not a
// moment, makes the check hold whatever the machine's pace: a hub that
// reads on takes every call before its client's stdin stays full.
func (h *Heap) HeldBack(t testing.TB, written <-chan error, in *os.File) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang
	defer cancel()
	var took bool // the client's writes ended
	var err error
	var fullSince time.Time
wait:
	for {
		switch {
		case Queued(t, in) < full:
			fullSince = time.Time{}
		case fullSince.IsZero():
			fullSince = time.Now()
		case time.Since(fullSince) >= settle:
			break wait
		}
		select {
		case err = <-written:
			took = true
			break wait
		case <-ctx.Done():
			t.Fatalf("the hub neither stopped reading the client nor took its calls: its stdin holds %d bytes", Queued(t, in))
		case <-time.After(time.Millisecond):
		}
	}
	if !took {
		select {
		case err = <-written:
			took = true
		default:
		}
	}
	if took {
		t.Errorf("the hub took every call of a client that does not read (%v): it holds them", err)
	}
	// The calls the hub took may still be on their way through it (on a
	// busy machine the upstream lags: a call then holds its request, the
	// upstream's copy and its answer at once): the heap is looked at
	// until it is within the limit, which a hub that holds what it should
	// not never is.
	var grown int64
	for {
		var held runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&held)
		grown = int64(held.HeapAlloc) - int64(h.base.HeapAlloc)
		if grown <= limit {
			break
		}
		select {
		case <-ctx.Done():
			t.Errorf("the hub's heap grew by %d MiB while a client did not read; want at most %d MiB (the client sends %s)", grown>>20, limit>>20, sent)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("heap grown by %d KiB while the client did not read", grown>>10)
}

// WaitForPipe waits until f's pipe holds at least n bytes unread: its
// reader has stopped reading it.
func WaitForPipe(t testing.TB, f *os.File, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang
	defer cancel()
	for {
		queued := Queued(t, f)
		if queued >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pipe holds %d bytes; want %d", queued, n)
		case <-time.After(time.Millisecond):
		}
	}
}

// Queued is how many bytes f's pipe holds unread (FIONREAD, which Linux
// names TIOCINQ; either end's file answers).
func Queued(t testing.TB, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn() // not Fd: that would make a polled pipe blocking
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return n
}
