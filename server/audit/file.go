package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// This file is the trail's file and its one writer (run), a goroutine of
// its own: it takes the lines requests queued (trail.go) and writes them,
// a batch at a time, under the file's lock. No request runs any of it: a
// call's path ends where its line is queued.

const (
	// batchLines and batchBytes bound one write of the writer.
	batchLines = 256
	batchBytes = 1 << 20
	// retryEvery is how often a failing trail tries again to write the
	// lines a failed write left (which also tells when it works again).
	retryEvery = time.Second
	// lockWait bounds how long a batch waits for another hub's write
	// to the same trail (see lock).
	lockWait = 10 * time.Second
	// pendingBytes bounds the lines a failing trail keeps to write
	// again; a line beyond it is lost.
	pendingBytes = 4 << 20
)

// output is what the trail writes to: an *os.File, or a test's disk.
// Stat, ReadAt and Truncate cut back what a write that failed part way
// left (see untear).
type output interface {
	Write(p []byte) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Open opens the trail cfg names (nil when the trail is off), counted in
// stats; its writer is started with spawn, which reports false when it
// starts nothing (a closed hub). stdout, when not nil, is the file that
// carries the stdio conversation: no trail may be opened on it.
func Open(cfg *config.Config, logger *slog.Logger, stats *Stats, stdout *os.FileInfo, spawn func(func()) bool) (*Trail, error) {
	path := cfg.AuditPath()
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit trail: %w", err)
	}
	// Read too, for a regular file: a short write is checked before it is
	// cut back (untear). Anything else (a pipe, a terminal, /dev/stdout) is
	// opened for writing only.
	flag := os.O_CREATE | os.O_RDWR | os.O_APPEND
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if fi.Mode()&os.ModeNamedPipe != 0 {
			// A named pipe no one reads would hold the open until a reader
			// comes, a reload with it (under swapMu, which Close takes too):
			// opened without waiting, it fails at once (ENXIO), and once
			// open its writes still wait, in the runtime's poller.
			flag |= syscall.O_NONBLOCK
		}
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit trail: %w", err)
	}
	a := newTrail(f, cfg.Audit, logger, stats)
	a.file, _ = f.Stat()
	if stdout != nil && a.On(*stdout) {
		f.Close()
		return nil, fmt.Errorf("audit trail: %s %w", path, ErrOnStdout)
	}
	if a.file != nil && a.file.Mode().IsRegular() {
		a.lockFile = f
	}
	if !spawn(a.run) {
		f.Close()
		return nil, errors.New("audit trail: the hub is closed")
	}
	return a, nil
}

// ErrOnStdout is an audit trail on the file that carries the stdio
// conversation (audit.path: /dev/stdout): its lines would go to the
// client amid the messages, which it cannot read.
var ErrOnStdout = errors.New("is the hub's stdout, which carries the MCP conversation over stdio: write the audit trail elsewhere")

// On reports whether the trail writes to the file fi describes.
func (a *Trail) On(fi os.FileInfo) bool {
	return a != nil && a.file != nil && os.SameFile(a.file, fi)
}

// newTrail is the trail that writes to f, once run is started.
func newTrail(f output, cfg config.Audit, logger *slog.Logger, stats *Stats) *Trail {
	return &Trail{f: f, args: cfg.Arguments, required: cfg.Required, logger: logger, stats: stats,
		queue: make(chan entry, queueLen), quit: make(chan struct{})}
}

// wrote clears a failure: the trail works again.
func (a *Trail) wrote() {
	if a.failure.Load() == nil {
		return
	}
	if old := a.failure.Swap(nil); old != nil {
		a.logger.Warn("audit trail working again", "lost", a.burst.Swap(0), "was", *old)
	}
}

// run is the trail's one writer: it writes what is queued, a batch at a
// time, until the trail is closed, then writes what is left, fsyncs and
// closes the file. What a failed write leaves is kept (up to
// pendingBytes, whole lines, oldest first), written again every
// retryEvery and ahead of the next batch, so that a disk that fails for a
// while loses nothing, and the trail learns when it works again.
func (a *Trail) run() {
	var (
		buf     []byte  // the lines of batch
		batch   []entry // queued, not yet written
		pending []byte  // lines a failed write left, oldest first
		retry   <-chan time.Time
	)
	flush := func() {
		if len(batch) == 0 && len(pending) == 0 {
			return
		}
		out := buf
		if len(pending) > 0 {
			out = append(pending, buf...)
		}
		unlock, err := a.lock()
		n := 0
		if err == nil {
			n, err = a.f.Write(out)
			a.writes++
		}
		if err == nil {
			pending, retry = nil, nil
			a.wrote()
		} else {
			pending = a.keep(out[a.untear(out[:n]):])
			retry = time.After(retryEvery)
			a.fail(fmt.Errorf("audit trail: %w", err))
		}
		unlock()
		for _, e := range batch {
			if e.done != nil {
				e.done <- err
			}
		}
		buf, batch = buf[:0], batch[:0]
	}
	add := func(e entry) {
		batch = append(batch, e)
		buf = append(buf, e.line...)
		if len(batch) >= batchLines || len(buf) >= batchBytes {
			flush()
		}
	}
	for {
		select {
		case e := <-a.queue:
			add(e)
			// Take what else is queued into the same write.
		more:
			for {
				select {
				case e := <-a.queue:
					add(e)
				default:
					break more
				}
			}
			flush()
		case <-retry:
			flush()
		case <-a.quit:
			// No one holds the trail: nothing more is queued than is now.
			for drained := false; !drained; {
				select {
				case e := <-a.queue:
					add(e)
				default:
					drained = true
				}
			}
			flush()
			if len(pending) > 0 {
				a.lost(bytes.Count(pending, []byte{'\n'}), nil)
			}
			a.finish()
			return
		}
	}
}

// lock takes the trail's file lock, for one batch: the hubs of other
// clients with the same config write the same file. One write(2) of
// O_APPEND lines is placed whole at the end on a local filesystem, but
// that is not promised of every filesystem (NFS is not), a short write is
// finished by a second write another writer may come before, and cutting
// back a short write (untear) reads, then truncates: each is safe only
// while no other writer goes between. The lock is held for one batch (a
// write of at most batchBytes and what failed writes left); a lock
// not had within lockWait fails the batch as a failed write would,
// and its lines are written again. Nothing to lock (a pipe, a test's
// disk): unlock is a no-op.
func (a *Trail) lock() (unlock func(), err error) {
	if a.lockFile == nil {
		return func() {}, nil
	}
	l, err := filelock.File(context.Background(), a.lockFile, lockWait)
	if err != nil {
		return func() {}, err
	}
	return func() {
		if err := l.Unlock(); err != nil {
			a.logger.Warn("audit trail: unlock", "err", err)
		}
	}, nil
}

// untear cuts back the part of a line that a failed write left at the end
// of the file (written, n bytes), so that no torn line stays, glued to
// the next; it returns where in what it was given the write must start
// again: 0, or n when the part cannot be cut (the rest then completes the
// torn line when the disk takes it). The file may have other writers (the
// hubs of other clients with the same config): it is cut only when it
// still ends with those bytes, so no one else's line is cut.
func (a *Trail) untear(written []byte) int {
	n := len(written)
	if n == 0 {
		return 0
	}
	size, err := a.endsWith(written)
	if err == nil {
		err = a.f.Truncate(size - int64(n))
	}
	if err != nil {
		a.logger.Warn("audit trail: cannot cut back a short write; its line is completed when the disk takes it", "err", err)
		return n
	}
	return 0
}

// endsWith returns the file's size, and an error when it does not end
// with b.
func (a *Trail) endsWith(b []byte) (int64, error) {
	fi, err := a.f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	start := size - int64(len(b))
	if start < 0 {
		return 0, fmt.Errorf("the file is %d bytes, fewer than the %d just written", size, len(b))
	}
	buf := make([]byte, min(len(b), 64<<10))
	for off := 0; off < len(b); off += len(buf) {
		chunk := buf[:min(len(buf), len(b)-off)]
		if _, err := a.f.ReadAt(chunk, start+int64(off)); err != nil {
			return 0, err
		}
		if !bytes.Equal(chunk, b[off:off+len(chunk)]) {
			return 0, errors.New("another writer appended to the file since")
		}
	}
	return size, nil
}

// keep is what of rest, left by a failed write, is written again: a copy
// of its first pendingBytes, cut after a whole line (at least one);
// the lines beyond are lost.
func (a *Trail) keep(rest []byte) []byte {
	if len(rest) > pendingBytes {
		cut := bytes.LastIndexByte(rest[:pendingBytes], '\n') + 1
		if cut == 0 {
			cut = bytes.IndexByte(rest, '\n') + 1
		}
		a.lost(bytes.Count(rest[cut:], []byte{'\n'}), nil)
		rest = rest[:cut]
	}
	return bytes.Clone(rest)
}

// finish fsyncs and closes the file and keeps why either failed. A
// trail that is not a regular file (audit.path: /dev/stdout in a
// container, a pipe to a collector) cannot be fsynced (EINVAL): not a
// failure.
func (a *Trail) finish() {
	err := a.f.Sync()
	if err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, syscall.EINVAL) && a.failure.Load() == nil {
		a.logger.Warn("audit trail: fsync at close", "err", err)
	}
	if err := a.f.Close(); err != nil {
		a.logger.Error("close the audit trail", "err", err)
		a.closeMu.Lock()
		a.closeErr = fmt.Errorf("audit trail: %w", err)
		a.closeMu.Unlock()
	}
}

// Err is why closing the trail failed, once it is closed.
func (a *Trail) Err() error {
	if a == nil {
		return nil
	}
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	return a.closeErr
}
