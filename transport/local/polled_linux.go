package local

import (
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// Polled returns a reader of f, the hub's stdin, whose reads wait in the
// runtime's poller instead of in a read system call that holds a
// processor: a second open file of the same pipe, non-blocking, so that
// f itself, which the client may share, keeps its flags. A hub that runs
// on one processor (see cmd/dynamic-mcp's localProcs) reads its stdin
// this way, since a blocked read would keep the processor from every
// other goroutine until the runtime takes it back (20 µs to 10 ms). f is
// returned when it is not a pipe, is polled already, or cannot be opened
// again (a socket cannot be: /proc answers ENXIO).
func Polled(f *os.File) *os.File { return reopen(f, os.O_RDONLY, f.SetReadDeadline) }

// PolledOut is Polled for f, the hub's stdout: a second open file of the
// same pipe, non-blocking, whose writes wait for room in the poller
// within a deadline, and which rawio can write without waking the
// runtime's monitor thread (a blocking stdout is written in a system call
// that holds the one processor while the pipe is full).
func PolledOut(f *os.File) *os.File { return reopen(f, os.O_WRONLY, f.SetWriteDeadline) }

// reopen opens the pipe f again, non-blocking, for flag (os.O_RDONLY or
// os.O_WRONLY); f when it is not a pipe, is polled already (setDeadline,
// f's, works), or cannot be opened again.
func reopen(f *os.File, flag int, setDeadline func(time.Time) error) *os.File {
	if setDeadline(time.Time{}) == nil {
		return f
	}
	if p, ok := OwnPipe(f, flag); ok {
		return p
	}
	return f
}

// OwnPipe opens the pipe f again, non-blocking, for flag (os.O_RDONLY or
// os.O_WRONLY): an open file of the same pipe that this process alone
// holds (rawio.Own), polled, and read or written with raw system calls,
// whatever another holder of f (a client, a bridge that passed f) does to
// f's flags. ok is false, and the file f, when f is not a pipe or cannot
// be opened again (a socket cannot be: /proc answers ENXIO; nor can a
// pipe's write end whose readers are gone). f is left open either way.
func OwnPipe(f *os.File, flag int) (_ *os.File, ok bool) {
	// Not f.Fd(): it would put a file Go made non-blocking back to
	// blocking, on the open file description f shares, and end f's
	// deadlines.
	rc, err := f.SyscallConn()
	if err != nil {
		return f, false
	}
	var p *os.File
	if cerr := rc.Control(func(fd uintptr) { p, ok = ownPipeFD(int(fd), flag) }); cerr != nil || !ok {
		return f, false
	}
	return p, true
}

// ownPipeFD is OwnPipe for the descriptor fd, left open either way.
func ownPipeFD(fd, flag int) (_ *os.File, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil, false
	}
	p, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	polled := p.SetReadDeadline
	if flag == os.O_WRONLY {
		polled = p.SetWriteDeadline
	}
	if polled(time.Time{}) != nil { // not polled after all
		p.Close()
		return nil, false
	}
	return rawio.Own(p), true // this open file is the process's alone
}
