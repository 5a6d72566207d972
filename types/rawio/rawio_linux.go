package rawio

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Read reads fd, a non-blocking file, into p in one raw system call,
// retrying on EINTR: what it read (0 at the end), and EAGAIN when there
// was nothing.
func Read(fd uintptr, p []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, p) }

// Write writes p to fd, a non-blocking file, in one raw system call,
// retrying on EINTR: what it wrote, and EAGAIN when there was no room.
func Write(fd uintptr, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }

// rawIO is read(2) or write(2) (trap) of p on fd, unknown to the
// scheduler: it must not block.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}

// File reads and writes f, a file the poller waits on, with raw system
// calls (see the package's doc); it is f otherwise. One Read and one
// Write may run at once, as on a pipe; not two Reads or two Writes.
type File struct {
	f  *os.File
	rc syscall.RawConn // nil: f is not polled; f's own Read and Write

	read, write func(fd uintptr) bool // once: a method value allocates
	reading     Reading               // the current Read's buffer and outcome
	// The current Write's buffer and outcome.
	wp   []byte
	wn   int
	werr error
}

// NewFile is a File of f: raw where f is owned (Own) and polled (its
// reads or writes take a deadline), else f's own reads and writes.
func NewFile(f *os.File) *File {
	r := &File{f: f}
	if !Owned(f) || f.SetReadDeadline(time.Time{}) != nil && f.SetWriteDeadline(time.Time{}) != nil {
		return r
	}
	if rc, err := f.SyscallConn(); err == nil {
		r.rc = rc
		r.read, r.write = r.readFD, r.writeFD
	}
	return r
}

// Raw reports whether f is read and written with raw system calls.
func (r *File) Raw() bool { return r.rc != nil }

// Read reads into p: what is there, waiting in the poller for some when
// nothing is; io.EOF at the end.
func (r *File) Read(p []byte) (int, error) {
	if r.rc == nil {
		return r.f.Read(p)
	}
	n, connErr, err := r.reading.Read(r.rc, r.read, p)
	switch {
	case connErr != nil:
		return 0, r.fileErr(connErr, r.f.Read)
	case err != nil && err != io.EOF:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: err}
	}
	return n, err
}

func (r *File) readFD(fd uintptr) bool {
	n, err := Read(fd, r.reading.P)
	if err == syscall.EAGAIN {
		return false
	}
	r.reading.N, r.reading.Err = n, err
	return true
}

// Write writes all of p, waiting in the poller for room, within f's
// write deadline (os.ErrDeadlineExceeded past it).
func (r *File) Write(p []byte) (int, error) {
	if r.rc == nil {
		return r.f.Write(p)
	}
	r.wp, r.wn, r.werr = p, 0, nil
	err := r.rc.Write(r.write)
	n, werr := r.wn, r.werr
	r.wp = nil
	switch {
	case werr != nil:
		return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: werr}
	case err != nil:
		return n, r.fileErr(err, r.f.Write)
	}
	return n, nil
}

// fileErr is the error f's own Read or Write (op) returns for err, the
// poller's: os.ErrClosed for a closed file, as op says with nothing to
// read or write (the raw connection's is the poller's own "use of closed
// file").
func (r *File) fileErr(err error, op func([]byte) (int, error)) error {
	if _, ferr := op(nil); ferr != nil {
		return ferr
	}
	return err
}

// writeFD writes what is left of wp; false (no room) leaves the wait to
// the poller.
func (r *File) writeFD(fd uintptr) bool {
	for r.wn < len(r.wp) {
		n, err := Write(fd, r.wp[r.wn:])
		if err == syscall.EAGAIN {
			return false
		}
		if err != nil {
			r.werr = err
			return true
		}
		r.wn += n
	}
	return true
}

// SetWriteDeadline sets f's write deadline.
func (r *File) SetWriteDeadline(t time.Time) error { return r.f.SetWriteDeadline(t) }

// SetReadDeadline sets f's read deadline.
func (r *File) SetReadDeadline(t time.Time) error { return r.f.SetReadDeadline(t) }

// Close closes f: a Read or Write waiting in the poller ends.
func (r *File) Close() error { return r.f.Close() }

// File is f.
func (r *File) File() *os.File { return r.f }
