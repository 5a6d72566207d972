package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

const (
	// queueLen is how many records may wait for the writer.
	queueLen = 1024
	// queueWait is how long a call waits for room in a full queue
	// (a disk slower than the calls), and with audit.required for its
	// record to be written, before the record counts as lost.
	queueWait = time.Second
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

// errClosed is a record for a trail that was closed: a closed hub's
// (see Closed), or one written without holding the trail.
var errClosed = errors.New("audit trail: closed")

// errFull is a record that found no room in the writer's queue in
// time.
var errFull = errors.New("audit trail: queue full")

// ErrUnavailable is the answer to a call that audit.required fails
// closed. It names no path: why the trail fails is in the log and in
// /readyz, for those who run the hub.
var ErrUnavailable = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "audit trail unavailable: the call is refused because its record cannot be written"}

// Stats are the counts over every trail a hub opened, so that a reload
// moving the trail does not reset them.
type Stats struct {
	lost atomic.Uint64 // records that never reached the file
}

// Lost is how many audit records never reached a trail of these stats,
// whichever trail they were for: a counter that never goes down, for
// /metrics.
func (s *Stats) Lost() uint64 { return s.lost.Load() }

// Trail is the audit trail: a JSON-lines file written by one goroutine
// (run) from a bounded queue, several lines a write, so that no call waits
// for the disk or for another call's write. A record is never dropped
// silently: a write that fails makes the trail failing (failure, shown by
// /readyz, logged once per burst) and its lines are written again until
// the disk takes them (see run); one that finds the queue full waits up
// to queueWait. A record that still finds no room, or that a failing
// trail has no more room to keep, is counted (Stats.lost). With
// audit.required (required) a call waits for its record to be written and
// fails closed when it is not, and no call starts while the trail fails.
//
// A reload that moves the trail retires it: it takes no new holders (see
// Hold), and its writer writes what is queued, then closes the
// file, once the requests that hold it are done, so none of their records
// is lost. Lines are written, not fsynced, as they come (a crash of the
// process loses at most the records still queued); the file is fsynced
// when the trail closes.
type Trail struct {
	args     bool // keep argument values
	required bool
	logger   *slog.Logger
	stats    *Stats
	f        output      // the writer's alone, once run has started
	file     os.FileInfo // f's, when it is a file; for On
	// lockFile, for a regular file, is f: each batch is written, and a
	// short write cut back, under its file lock (see flush in run).
	lockFile *os.File
	writes   int // to f, so far; the writer's alone

	queue   chan entry
	quit    chan struct{} // closed when the trail is closed: run writes what is queued and ends
	closed  atomic.Bool
	closeMu sync.Mutex // guards closeErr
	// closeErr is why closing the file failed, once run has ended.
	closeErr error

	// failure is why the trail fails (a write error, a full queue), nil
	// while it works; burst counts the records lost since it began.
	failure atomic.Pointer[error]
	burst   atomic.Uint64

	// Holding is apart from writing, so that a request that only holds
	// the trail (every request does) never waits behind a record.
	holdMu  sync.Mutex // guards users and retired
	users   int        // requests holding the trail
	retired bool       // no new holders; closed when users reaches 0
}

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

// entry is one line on its way to the file; done, when not nil,
// gets the outcome of its write.
type entry struct {
	line []byte
	done chan error
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

// Closed is the trail of a hub that was closed: it holds, takes no
// record and counts each as lost.
func Closed(stats *Stats, required bool) *Trail {
	a := &Trail{required: required, stats: stats, logger: slog.New(slog.DiscardHandler),
		quit: make(chan struct{})}
	a.closed.Store(true)
	err := errClosed
	a.failure.Store(&err)
	close(a.quit)
	return a
}

// Admit reports whether a call that will be audited may go ahead: with
// audit.required, not while the trail fails.
func (a *Trail) Admit() error {
	if a == nil || !a.required || a.failure.Load() == nil {
		return nil
	}
	return ErrUnavailable
}

// Write queues r for the writer. It returns an error only with
// audit.required, when r is not in the file: the call must fail closed.
// Without, a record that cannot be written is counted and logged here.
// The caller holds the trail (see Hold).
func (a *Trail) Write(r Record) error {
	if a == nil {
		return nil
	}
	if !a.args {
		r.Arguments = nil
	}
	r.Clip()
	b, err := json.Marshal(r)
	if err != nil {
		a.lost(1, nil)
		a.logger.Error("audit trail: a record lost", "err", err)
		return a.failed()
	}
	if a.closed.Load() {
		// A closed hub's trail (see Closed); holding any other
		// prevents this.
		a.lost(1, errClosed)
		return a.failed()
	}
	e := entry{line: append(b, '\n')}
	if a.required {
		e.done = make(chan error, 1)
	}
	var timer *time.Timer
	select {
	case a.queue <- e:
	default:
		// Full: the disk is slower than the calls. Wait a moment.
		timer = time.NewTimer(queueWait)
		defer timer.Stop()
		select {
		case a.queue <- e:
		case <-timer.C:
			a.lost(1, errFull)
			return a.failed()
		}
	}
	if e.done == nil {
		return nil
	}
	if timer == nil {
		timer = time.NewTimer(queueWait)
		defer timer.Stop()
	}
	select {
	case err := <-e.done:
		if err != nil {
			return ErrUnavailable
		}
		return nil
	case <-timer.C:
		// Still queued, or being written to a disk that hangs: the call
		// fails closed; the record may yet reach the file.
		return ErrUnavailable
	}
}

// failed is what write returns for a record that was lost.
func (a *Trail) failed() error {
	if a.required {
		return ErrUnavailable
	}
	return nil
}

// lost counts n records that will never reach the file, and makes the
// trail failing for err, unless err is nil.
func (a *Trail) lost(n int, err error) {
	a.stats.lost.Add(uint64(n))
	a.burst.Add(uint64(n))
	if err != nil {
		a.fail(err)
	}
}

// fail makes the trail failing for err; the first failure of a burst is
// logged.
func (a *Trail) fail(err error) {
	if a.failure.CompareAndSwap(nil, &err) {
		a.logger.Error("audit trail failing: records wait or are lost until it works again", "err", err, "required", a.required)
	}
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

// Status is why the trail fails, nil while it works (and when it is off).
func (a *Trail) Status() error {
	if a == nil {
		return nil
	}
	if p := a.failure.Load(); p != nil {
		return *p
	}
	return nil
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

// Hold keeps the trail open for one more writer, until Release. It
// reports false when the trail was retired: the writer must take the
// current one instead. A nil trail (off) is always held, and so is a
// closed hub's.
func (a *Trail) Hold() bool {
	if a == nil || a.queue == nil {
		return true
	}
	a.holdMu.Lock()
	defer a.holdMu.Unlock()
	if a.retired {
		return false
	}
	a.users++
	return true
}

// Release ends a hold; the last one closes a retired trail.
func (a *Trail) Release() {
	if a == nil || a.queue == nil {
		return
	}
	a.holdMu.Lock()
	a.users--
	last := a.retired && a.users == 0
	a.holdMu.Unlock()
	if last {
		a.close()
	}
}

// Retire takes no new holders and closes the trail now, or when the last
// holder releases it. The writer then writes what is queued and closes
// the file; the hub's Close waits for it.
func (a *Trail) Retire() {
	if a == nil || a.queue == nil {
		return
	}
	a.holdMu.Lock()
	a.retired = true
	held := a.users > 0
	a.holdMu.Unlock()
	if !held {
		a.close()
	}
}

func (a *Trail) close() {
	if a.closed.CompareAndSwap(false, true) {
		close(a.quit)
	}
}
