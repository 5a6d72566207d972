package jsonrpc

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// pipeBuf is PIPE_BUF on Linux: a write of at most this many bytes to a
// pipe is atomic, so without O_NONBLOCK's room for all of it nothing is
// written.
const pipeBuf = 4096

// rawPipe is w's raw connection when w is a pipe in non-blocking mode
// (one the runtime polls, as os/exec's are), else nil.
func rawPipe(w any) syscall.RawConn {
	f, ok := w.(*os.File)
	if !ok || f.SetWriteDeadline(time.Time{}) != nil { // not polled: a blocking fd
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// TryWrite writes msg and a newline in one write to a pipe with room for
// them, never waiting.
func (s *lineStream) TryWrite(msg []byte) (bool, error) {
	if s.raw == nil || len(msg)+1 > pipeBuf {
		return false, nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.broken.Load() {
		return false, errBroken
	}
	if s.deadlineSet {
		// An earlier write's deadline, past or not, would refuse or
		// bound this one: it never waits anyway.
		if err := s.deadlines.SetWriteDeadline(time.Time{}); err != nil {
			return false, err
		}
		s.deadlineSet = false
	}
	s.wbuf = append(append(s.wbuf[:0], msg...), '\n')
	if s.rawWrite == nil {
		s.rawWrite = s.writeRaw // once: a method value allocates
	}
	err := s.raw.Write(s.rawWrite)
	n, werr := s.rawN, s.rawErr
	switch {
	case err != nil:
		werr = err
	case errors.Is(werr, syscall.EAGAIN):
		return false, nil
	case werr == nil && n == len(s.wbuf):
		return true, nil
	case werr == nil:
		werr = errors.New("a pipe took part of an atomic write")
	}
	s.broken.Store(true)
	return false, werr
}

// writeRaw is TryWrite's one write of wbuf, its outcome left in rawN and
// rawErr. s.wmu is held.
func (s *lineStream) writeRaw(fd uintptr) bool {
	if s.ownedW { // never blocks: see rawio
		s.rawN, s.rawErr = rawio.Write(fd, s.wbuf)
		return true
	}
	for {
		s.rawN, s.rawErr = syscall.Write(int(fd), s.wbuf)
		if s.rawErr != syscall.EINTR {
			return true
		}
	}
}
