package rawio

import (
	"io"
	"syscall"
)

// Reading is one read through a syscall.RawConn at a time: the buffer
// its read function reads into (P) and what it read (N, Err). The read
// function is a method value made once by its owner (a closure a read
// allocates), reading P into N and Err.
type Reading struct {
	P   []byte
	N   int
	Err error
}

// Read reads into p through rc with read: what it read, and io.EOF when
// that was nothing. connErr is rc's own error (the file closed), readErr
// the system call's.
func (r *Reading) Read(rc syscall.RawConn, read func(fd uintptr) bool, p []byte) (n int, connErr, readErr error) {
	if len(p) == 0 {
		return 0, nil, nil
	}
	r.P, r.N, r.Err = p, 0, nil
	connErr = rc.Read(read)
	n, readErr = r.N, r.Err
	r.P = nil
	switch {
	case connErr != nil || readErr != nil:
		return 0, connErr, readErr
	case n == 0:
		return 0, nil, io.EOF
	}
	return n, nil, nil
}
