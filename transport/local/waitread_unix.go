//go:build unix

package local

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// readWait is how long a read of a passed stdin waits for input on its
// own thread before it leaves the wait to the runtime's poller: a client
// that sends its next request within it is read without a wake-up through
// the poller, and an idle client holds no thread. Close waits for it at
// most.
const readWait = 20 * time.Millisecond

// WaitingReader reads f, a non-blocking pipe or socket that ReceiveFiles
// passed, the way a blocking stdin is read: a read that finds nothing
// waits in a poll system call on the reading thread, which wakes by
// itself when the input comes, for up to readWait; only then does it
// wait in the runtime's poller. Through the poller, each request cost the
// shared hub about one and a half context switches and 15-20 µs of CPU
// more than a blocking stdin costs the standalone hub (the thread the
// poller wakes wakes another to spin; issue 33, one call in flight: 4.1-4.4
// voluntary switches a call, 2.3-3.1 with a blocking stdin). f stays
// non-blocking, so that Close ends a read (within readWait) and the
// client's other holder of it, the bridge, sees no change. A hub on one
// processor (cmd/dynamic-mcp's localProcs) leaves the wait to the poller
// at once: a thread waiting in poll would hold the one processor, and
// with no other processor idle no thread is woken to spin.
func WaitingReader(f *os.File) io.ReadCloser {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	r := &waitingReader{f: f, rc: rc}
	r.read = r.readFD // once: a method value allocates
	return r
}

type waitingReader struct {
	f    *os.File
	rc   syscall.RawConn
	read func(fd uintptr) bool
	// The current Read's, for readFD: Read is not called by two
	// goroutines at once.
	reading rawio.Reading
	poll    [1]unix.PollFd
}

// Read reads into p, waiting for input as WaitingReader says.
func (r *waitingReader) Read(p []byte) (int, error) {
	n, connErr, err := r.reading.Read(r.rc, r.read, p)
	if connErr != nil {
		return 0, connErr
	}
	return n, err
}

// readFD reads fd, waiting on this thread for input the first time it
// finds none, unless the process runs on one processor; false (still
// none) leaves the wait to the poller.
func (r *waitingReader) readFD(fd uintptr) bool {
	waited := false
	for {
		// Not rawio's read: f is the bridge's, passed, and its open file
		// description the bridge's too (rawio.Own).
		n, err := syscall.Read(int(fd), r.reading.P)
		switch {
		case err == syscall.EINTR:
			continue
		case err != syscall.EAGAIN:
			r.reading.N, r.reading.Err = max(n, 0), err
			return true
		case waited || runtime.GOMAXPROCS(0) == 1:
			return false
		}
		waited = true
		r.poll[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		if _, err := unix.Poll(r.poll[:], int(readWait/time.Millisecond)); err != nil && err != syscall.EINTR {
			return false
		}
	}
}

// Close closes the file.
func (r *waitingReader) Close() error { return r.f.Close() }
