package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// headSize and tailSize are how much of the start and the end of an
// over-long line are kept, to find its id.
const (
	headSize = 64 << 10
	tailSize = 256
)

// maxKeptWriteBuf is the largest write buffer a line stream keeps between
// writes: one large message's buffer is let go.
const maxKeptWriteBuf = 1 << 20

var errBroken = fmt.Errorf("%w: the stream failed before", ErrWrite)

// lineStream is a Stream of newline-delimited messages over a byte
// stream: the client's stdio, a stdio upstream.
type lineStream struct {
	r     io.Reader
	w     io.Writer
	ww    io.Writer // w, or its raw writes where the poller waits on it (rawio)
	br    *bufio.Reader
	limit int
	next  error // a read error that came with the last line: Read's next answer

	raw       syscall.RawConn // w's, when it is a pipe TryWrite can use
	ownedW    bool            // w is a file of this process's own (rawio.Own): written raw
	deadlines deadliner       // w, when its writes can be given a deadline
	// deadlineSet is whether a write left a deadline on w; guarded by wmu.
	deadlineSet bool
	// rawWrite, rawN and rawErr are TryWrite's, guarded by wmu.
	rawWrite func(fd uintptr) bool
	rawN     int
	rawErr   error
	// nowWrite and now are writeNow's, guarded by wmu.
	nowWrite func(fd uintptr)
	now      []byte
	wmu      sync.Mutex // held for a write; guards wbuf
	wbuf     []byte
	broken   atomic.Bool // a write failed or timed out: the stream is not written again

	closeOnce sync.Once
}

// NewLineStream is a Stream reading newline-delimited messages from r and
// writing them to w, one a line. A line over maxSize bytes
// (DefaultMaxMessageSize when 0) is not buffered whole: Read skips it and
// returns a *TooLargeError with its first and last bytes. A write is
// bounded by its ctx: by the writer's own deadline where it has one (a
// socket, a pollable pipe), else by closing w when ctx ends. Close closes
// r and w where they are io.Closers; a Read or Write blocked on a stream
// that closing does not interrupt (a blocking stdin) stays blocked.
func NewLineStream(r io.Reader, w io.Writer, maxSize int) Stream {
	if maxSize <= 0 {
		maxSize = DefaultMaxMessageSize
	}
	s := &lineStream{r: r, w: w, ww: w, raw: rawPipe(w), br: bufio.NewReaderSize(rawReader(r), 64<<10), limit: maxSize}
	if f, ok := w.(*os.File); ok {
		if rf := rawio.NewFile(f); rf.Raw() {
			s.ww, s.ownedW = rf, true
		}
	}
	if d, ok := w.(deadliner); ok && d.SetWriteDeadline(time.Time{}) == nil {
		s.deadlines = d
	}
	return s
}

// rawReader is r, read with raw system calls where it is a file the
// poller waits on (rawio: a read that finds nothing leaves the wait to
// the poller, and none wakes the runtime's monitor thread).
func rawReader(r io.Reader) io.Reader {
	if f, ok := r.(*os.File); ok {
		if rf := rawio.NewFile(f); rf.Raw() {
			return rf
		}
	}
	return r
}

// moreBuffered reports whether bytes after the last line were read
// already. Only Read's goroutine may call it.
func (s *lineStream) moreBuffered() bool { return s.br.Buffered() > 0 }

// boundsWrites reports whether the stream's writes time out by themselves,
// so that a Conn need not arm a timer for each.
func (s *lineStream) boundsWrites() bool { return s.deadlines != nil }

// Read returns the next line that is not blank, without surrounding
// space; a line with no newline at the end of the input counts.
func (s *lineStream) Read() ([]byte, error) {
	for s.next == nil {
		var buf, tail []byte
		size := 0
		for {
			chunk, err := s.br.ReadSlice('\n')
			size += len(chunk)
			if size <= s.limit || len(buf) < headSize {
				buf = append(buf, chunk...)
			}
			if size > s.limit {
				tail = append(tail, chunk[max(0, len(chunk)-tailSize):]...)
				tail = tail[max(0, len(tail)-tailSize):]
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			s.next = err
			break
		}
		if size > s.limit {
			return nil, &TooLargeError{Size: size, Limit: s.limit, Head: buf[:min(len(buf), headSize)], Tail: bytes.TrimSpace(tail)}
		}
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			return line, nil
		}
	}
	return nil, s.next
}

// copyMax is the largest message a write copies to put its newline
// after it: a larger one is written from its own bytes, its newline with
// what follows, since one more write costs less than copying it.
const copyMax = 64 << 10

// Write writes msg and a newline.
func (s *lineStream) Write(ctx context.Context, msg []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	one := [1][]byte{msg}
	return s.writeLines(ctx, one[:])
}

// WriteBatch writes msgs, each with a newline, in one write where they
// are small.
func (s *lineStream) WriteBatch(ctx context.Context, msgs [][]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLines(ctx, msgs)
}

// writeLines writes msgs, each followed by a newline, within ctx. s.wmu
// is held.
func (s *lineStream) writeLines(ctx context.Context, msgs [][]byte) error {
	if s.broken.Load() {
		return errBroken
	}
	s.wbuf = s.wbuf[:0]
	var err error
	for _, m := range msgs {
		if len(m) <= copyMax {
			s.wbuf = append(append(s.wbuf, m...), '\n')
			continue
		}
		if err = s.writeOut(ctx, s.wbuf); err != nil {
			break
		}
		if err = s.writeOut(ctx, m); err != nil {
			break
		}
		s.wbuf = append(s.wbuf[:0], '\n')
	}
	if err == nil {
		err = s.writeOut(ctx, s.wbuf)
	}
	s.wbuf = s.wbuf[:0]
	if cap(s.wbuf) > maxKeptWriteBuf {
		s.wbuf = nil
	}
	if err != nil {
		s.broken.Store(true)
	}
	return err
}

func (s *lineStream) writeOut(ctx context.Context, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return s.writeWithin(ctx, b)
}

// deadliner is a writer whose writes can time out by themselves (a pipe
// or socket the runtime polls).
type deadliner interface{ SetWriteDeadline(time.Time) error }

func (s *lineStream) writeWithin(ctx context.Context, b []byte) error {
	// A Conn's ctx need not be watched: the Conn closes the stream when
	// its write times out.
	_, closes := ctx.(streamClosingCtx)
	watch := ctx.Done() != nil && !closes
	if d := s.deadlines; d != nil {
		if s.ownedW && s.raw != nil && ctx.Err() == nil {
			// What the pipe has room for goes at once, with no deadline
			// set (each set is a change to the runtime's timers): only a
			// write that must wait for room waits within one.
			if b = s.writeNow(b); len(b) == 0 {
				return nil
			}
		}
		deadline, _ := ctx.Deadline() // none: the zero time, no deadline
		if err := d.SetWriteDeadline(deadline); err != nil {
			return err // closed
		}
		s.deadlineSet = true // or the past one a cancel sets below
		stop := func() bool { return true }
		if watch { // ended before its deadline
			stop = afterFunc(ctx, func() { _ = d.SetWriteDeadline(time.Unix(1, 0)) })
		}
		_, err := s.ww.Write(b)
		stop()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ErrWriteTimeout
		}
		return err
	}
	if !watch {
		_, err := s.w.Write(b)
		if err != nil && ctx.Err() != nil {
			return ErrWriteTimeout
		}
		return err
	}
	// No deadline of its own: closing w is what ends a write blocked past
	// ctx.
	stop := afterFunc(ctx, s.closeWriter)
	_, err := s.w.Write(b)
	if !stop() {
		return ErrWriteTimeout
	}
	return err
}

// writeNow writes what of b the pipe, a file of this process's own
// (rawio), takes without waiting, and returns the rest: what a full pipe
// or a failed write left (the write that waits for room then writes it,
// or fails as a write has always failed). s.wmu is held.
func (s *lineStream) writeNow(b []byte) []byte {
	if s.nowWrite == nil {
		s.nowWrite = s.writeNowFD // once: a method value allocates
	}
	s.now = b
	_ = s.raw.Control(s.nowWrite)
	b, s.now = s.now, nil
	return b
}

// writeNowFD is writeNow's writes of s.now to fd, leaving what is left
// in s.now.
func (s *lineStream) writeNowFD(fd uintptr) {
	for len(s.now) > 0 {
		n, err := rawio.Write(fd, s.now)
		if err != nil {
			return
		}
		s.now = s.now[n:]
	}
}

// afterFunc is context.AfterFunc whose stop, when f has started, waits
// for f to end, so that no goroutine of a write outlives it.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	ran := make(chan struct{})
	stopf := context.AfterFunc(ctx, func() {
		defer close(ran)
		f()
	})
	return func() bool {
		if stopf() {
			return true
		}
		<-ran
		return false
	}
}

func (s *lineStream) closeWriter() {
	if c, ok := s.w.(io.Closer); ok {
		_ = c.Close()
	}
}

// Close closes w, then r, where they are io.Closers.
func (s *lineStream) Close() error {
	s.closeOnce.Do(func() {
		s.closeWriter()
		if c, ok := s.r.(io.Closer); ok {
			_ = c.Close()
		}
	})
	return nil
}
