package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// auditRecord is one line of the audit trail.
type auditRecord struct {
	Time       time.Time       `json:"time"`
	Session    string          `json:"session"`
	User       string          `json:"user,omitempty"`    // the caller's name, else subject (see identity.Identity.User)
	Subject    string          `json:"subject,omitempty"` // the caller's key: jwt:SUBJECT, token:NAME (see identity.Identity.Key)
	Group      string          `json:"group,omitempty"`
	Server     string          `json:"server,omitempty"`
	Method     string          `json:"method"`
	Tool       string          `json:"tool,omitempty"`
	URI        string          `json:"uri,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	Decision   string          `json:"decision"` // allow, deny, log, prompt (answered), not_found, rate_limited (over a rule's rate:)
	Rule       string          `json:"rule,omitempty"`
	DurationMS float64         `json:"duration_ms"`
	Outcome    string          `json:"outcome"` // a traffic.Status: ok, tool_error, error, blocked, not_found, cancelled
	Error      string          `json:"error,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsBytes and ArgumentsSHA256 stand for arguments over
	// maxAuditArguments: their size and digest, not their value.
	ArgumentsBytes  int    `json:"arguments_bytes,omitempty"`
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Clipped says that a string of the record ends in clippedMark, cut,
	// or that its arguments are only a digest.
	Clipped bool `json:"clipped,omitempty"`
	// Grant is the approval grant that let a prompt rule's call through
	// (issue 24); ApprovedBy who approved it ("ui", "cli:USER"), by that
	// grant or for this call alone.
	Grant      string `json:"grant,omitempty"`
	ApprovedBy string `json:"approved_by,omitempty"`
	// Event names an agent's reportAction, Report is what it reported
	// (its details are among its arguments), and Trust says that the
	// record is the agent's word, never proof (cooperative.go).
	Event  string            `json:"event,omitempty"`
	Report map[string]string `json:"report,omitempty"`
	Trust  string            `json:"trust,omitempty"`
}

// What a client writes reaches a record (a tool, prompt or resource name
// it may invent, an error that quotes one, its arguments), and a line is
// written for every call: so each is bounded where the record is kept
// (write), lest a client that names a tool of megabytes grow the trail by
// megabytes a call.
const (
	// maxAuditText bounds each string of a record, as spans' attributes
	// are bounded; a string cut ends in clippedMark.
	maxAuditText = 1 << 10
	// maxAuditArguments bounds the arguments kept (audit.arguments), as
	// the client encoded them; larger ones are kept as their size and
	// SHA-256 digest, which tell the same call again.
	maxAuditArguments = 4 << 10
)

// clippedMark ends a string of a record that was cut.
const clippedMark = "…"

// clip bounds what r holds of what the client wrote (see maxAuditText
// and maxAuditArguments), marking r clipped where it cut.
func (r *auditRecord) clip() {
	for _, s := range []*string{&r.Session, &r.User, &r.Subject, &r.Group, &r.Server, &r.Method, &r.Tool, &r.URI, &r.Prompt, &r.Decision, &r.Rule, &r.Outcome, &r.Error} {
		if len(*s) > maxAuditText {
			*s = clip.Marked(*s, maxAuditText, clippedMark)
			r.Clipped = true
		}
	}
	if len(r.Arguments) > maxAuditArguments {
		sum := sha256.Sum256(r.Arguments)
		r.ArgumentsBytes, r.ArgumentsSHA256 = len(r.Arguments), hex.EncodeToString(sum[:])
		r.Arguments = nil
		r.Clipped = true
	}
}

const (
	// auditQueueLen is how many records may wait for the writer.
	auditQueueLen = 1024
	// auditQueueWait is how long a call waits for room in a full queue
	// (a disk slower than the calls), and with audit.required for its
	// record to be written, before the record counts as lost.
	auditQueueWait = time.Second
	// auditBatchLines and auditBatchBytes bound one write of the writer.
	auditBatchLines = 256
	auditBatchBytes = 1 << 20
	// auditRetry is how often a failing trail tries again to write the
	// lines a failed write left (which also tells when it works again).
	auditRetry = time.Second
	// auditLockWait bounds how long a batch waits for another hub's write
	// to the same trail (see lock).
	auditLockWait = 10 * time.Second
	// auditPendingBytes bounds the lines a failing trail keeps to write
	// again; a line beyond it is lost.
	auditPendingBytes = 4 << 20
)

// errAuditClosed is a record for a trail that was closed: a closed hub's
// (see closedAudit), or one written without holding the trail.
var errAuditClosed = errors.New("audit trail: closed")

// errAuditFull is a record that found no room in the writer's queue in
// time.
var errAuditFull = errors.New("audit trail: queue full")

// auditUnavailable is the answer to a call that audit.required fails
// closed. It names no path: why the trail fails is in the log and in
// /readyz, for those who run the hub.
var auditUnavailable = &rpcError{Code: codeInternalError, Message: "audit trail unavailable: the call is refused because its record cannot be written"}

// auditStats are the hub's counts over every trail it opened, so that a
// reload moving the trail does not reset them.
type auditStats struct {
	lost atomic.Uint64 // records that never reached the file
}

// AuditStatus is why the audit trail fails (a write error, records that
// found no room in its queue in time), nil while it works or is off; it
// clears once a write succeeds again. /readyz shows it (see
// HealthComponents).
func (h *Hub) AuditStatus() error { return h.snapshot().audit.status() }

// AuditLost is how many audit records never reached the trail since New,
// whichever trail they were for: a counter that never goes down, for
// /metrics.
func (h *Hub) AuditLost() uint64 { return h.audits.lost.Load() }

// HealthComponents are the parts of the hub besides its upstreams that
// /readyz reports (see health.Mount): the audit trail.
func (h *Hub) HealthComponents() []health.Component {
	return []health.Component{{Name: "audit", Check: h.AuditStatus}}
}

// auditLog is the audit trail: a JSON-lines file written by one goroutine
// (run) from a bounded queue, several lines a write, so that no call waits
// for the disk or for another call's write. A record is never dropped
// silently: a write that fails makes the trail failing (failure, shown by
// /readyz, logged once per burst) and its lines are written again until
// the disk takes them (see run); one that finds the queue full waits up
// to auditQueueWait. A record that still finds no room, or that a failing
// trail has no more room to keep, is counted (auditStats.lost). With
// audit.required (required) a call waits for its record to be written and
// fails closed when it is not, and no call starts while the trail fails.
//
// A reload that moves the trail retires it: it takes no new holders (see
// Hub.acquire), and its writer writes what is queued, then closes the
// file, once the requests that hold it are done, so none of their records
// is lost. Lines are written, not fsynced, as they come (a crash of the
// process loses at most the records still queued); the file is fsynced
// when the trail closes.
type auditLog struct {
	args     bool // keep argument values
	required bool
	logger   *slog.Logger
	stats    *auditStats
	f        auditFile   // the writer's alone, once run has started
	file     os.FileInfo // f's, when it is a file; for auditOnStdout
	// lockFile, for a regular file, is f: each batch is written, and a
	// short write cut back, under its file lock (see flush in run).
	lockFile *os.File
	writes   int // to f, so far; the writer's alone

	queue   chan auditEntry
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

// auditFile is what the trail writes to: an *os.File, or a test's disk.
// Stat, ReadAt and Truncate cut back what a write that failed part way
// left (see untear).
type auditFile interface {
	Write(p []byte) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

// auditEntry is one line on its way to the file; done, when not nil,
// gets the outcome of its write.
type auditEntry struct {
	line []byte
	done chan error
}

// openAudit opens the trail cfg names, with its writer started (nil when
// the trail is off).
func (h *Hub) openAudit(cfg *config.Config) (*auditLog, error) {
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
	if err := h.auditOnStdout(path, f); err != nil {
		f.Close()
		return nil, err
	}
	a := newAuditLog(f, cfg.Audit, h.logger, &h.audits)
	a.file, _ = f.Stat()
	if a.file != nil && a.file.Mode().IsRegular() {
		a.lockFile = f
	}
	if !h.spawn(a.run) {
		f.Close()
		return nil, errors.New("audit trail: the hub is closed")
	}
	return a, nil
}

// errAuditOnStdout is an audit trail on the file that carries the stdio
// conversation (audit.path: /dev/stdout): its lines would go to the
// client amid the messages, which it cannot read.
var errAuditOnStdout = errors.New("is the hub's stdout, which carries the MCP conversation over stdio: write the audit trail elsewhere")

// auditOnStdout refuses a trail at path, open as f, that is the stdio
// face's output.
func (h *Hub) auditOnStdout(path string, f *os.File) error {
	out := h.stdioOut.Load()
	if out == nil {
		return nil
	}
	if fi, err := f.Stat(); err == nil && os.SameFile(fi, *out) {
		return fmt.Errorf("audit trail: %s %w", path, errAuditOnStdout)
	}
	return nil
}

// newAuditLog is the trail that writes to f, once run is started.
func newAuditLog(f auditFile, cfg config.Audit, logger *slog.Logger, stats *auditStats) *auditLog {
	return &auditLog{f: f, args: cfg.Arguments, required: cfg.Required, logger: logger, stats: stats,
		queue: make(chan auditEntry, auditQueueLen), quit: make(chan struct{})}
}

// closedAudit is the trail of a hub that was closed: it holds, takes no
// record and counts each as lost.
func closedAudit(stats *auditStats, required bool) *auditLog {
	a := &auditLog{required: required, stats: stats, logger: slog.New(slog.DiscardHandler),
		quit: make(chan struct{})}
	a.closed.Store(true)
	err := errAuditClosed
	a.failure.Store(&err)
	close(a.quit)
	return a
}

// admit reports whether a call that will be audited may go ahead: with
// audit.required, not while the trail fails.
func (a *auditLog) admit() error {
	if a == nil || !a.required || a.failure.Load() == nil {
		return nil
	}
	return auditUnavailable
}

// write queues r for the writer. It returns an error only with
// audit.required, when r is not in the file: the call must fail closed.
// Without, a record that cannot be written is counted and logged here.
// The caller holds the trail (see hold).
func (a *auditLog) write(r auditRecord) error {
	if a == nil {
		return nil
	}
	if !a.args {
		r.Arguments = nil
	}
	r.clip()
	b, err := json.Marshal(r)
	if err != nil {
		a.lost(1, nil)
		a.logger.Error("audit trail: a record lost", "err", err)
		return a.failed()
	}
	if a.closed.Load() {
		// A closed hub's trail (see closedAudit); holding any other
		// prevents this.
		a.lost(1, errAuditClosed)
		return a.failed()
	}
	e := auditEntry{line: append(b, '\n')}
	if a.required {
		e.done = make(chan error, 1)
	}
	var timer *time.Timer
	select {
	case a.queue <- e:
	default:
		// Full: the disk is slower than the calls. Wait a moment.
		timer = time.NewTimer(auditQueueWait)
		defer timer.Stop()
		select {
		case a.queue <- e:
		case <-timer.C:
			a.lost(1, errAuditFull)
			return a.failed()
		}
	}
	if e.done == nil {
		return nil
	}
	if timer == nil {
		timer = time.NewTimer(auditQueueWait)
		defer timer.Stop()
	}
	select {
	case err := <-e.done:
		if err != nil {
			return auditUnavailable
		}
		return nil
	case <-timer.C:
		// Still queued, or being written to a disk that hangs: the call
		// fails closed; the record may yet reach the file.
		return auditUnavailable
	}
}

// failed is what write returns for a record that was lost.
func (a *auditLog) failed() error {
	if a.required {
		return auditUnavailable
	}
	return nil
}

// lost counts n records that will never reach the file, and makes the
// trail failing for err, unless err is nil.
func (a *auditLog) lost(n int, err error) {
	a.stats.lost.Add(uint64(n))
	a.burst.Add(uint64(n))
	if err != nil {
		a.fail(err)
	}
}

// fail makes the trail failing for err; the first failure of a burst is
// logged.
func (a *auditLog) fail(err error) {
	if a.failure.CompareAndSwap(nil, &err) {
		a.logger.Error("audit trail failing: records wait or are lost until it works again", "err", err, "required", a.required)
	}
}

// wrote clears a failure: the trail works again.
func (a *auditLog) wrote() {
	if a.failure.Load() == nil {
		return
	}
	if old := a.failure.Swap(nil); old != nil {
		a.logger.Warn("audit trail working again", "lost", a.burst.Swap(0), "was", *old)
	}
}

// status is why the trail fails, nil while it works (and when it is off).
func (a *auditLog) status() error {
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
// auditPendingBytes, whole lines, oldest first), written again every
// auditRetry and ahead of the next batch, so that a disk that fails for a
// while loses nothing, and the trail learns when it works again.
func (a *auditLog) run() {
	var (
		buf     []byte       // the lines of batch
		batch   []auditEntry // queued, not yet written
		pending []byte       // lines a failed write left, oldest first
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
			retry = time.After(auditRetry)
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
	add := func(e auditEntry) {
		batch = append(batch, e)
		buf = append(buf, e.line...)
		if len(batch) >= auditBatchLines || len(buf) >= auditBatchBytes {
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
// write of at most auditBatchBytes and what failed writes left); a lock
// not had within auditLockWait fails the batch as a failed write would,
// and its lines are written again. Nothing to lock (a pipe, a test's
// disk): unlock is a no-op.
func (a *auditLog) lock() (unlock func(), err error) {
	if a.lockFile == nil {
		return func() {}, nil
	}
	l, err := filelock.File(context.Background(), a.lockFile, auditLockWait)
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
func (a *auditLog) untear(written []byte) int {
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
func (a *auditLog) endsWith(b []byte) (int64, error) {
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
// of its first auditPendingBytes, cut after a whole line (at least one);
// the lines beyond are lost.
func (a *auditLog) keep(rest []byte) []byte {
	if len(rest) > auditPendingBytes {
		cut := bytes.LastIndexByte(rest[:auditPendingBytes], '\n') + 1
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
func (a *auditLog) finish() {
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

// err is why closing the trail failed, once it is closed.
func (a *auditLog) err() error {
	if a == nil {
		return nil
	}
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	return a.closeErr
}

// hold keeps the trail open for one more writer, until release. It
// reports false when the trail was retired: the writer must take the
// current one instead. A nil trail (off) is always held, and so is a
// closed hub's.
func (a *auditLog) hold() bool {
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

// release ends a hold; the last one closes a retired trail.
func (a *auditLog) release() {
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

// retire takes no new holders and closes the trail now, or when the last
// holder releases it. The writer then writes what is queued and closes
// the file; Hub.Close waits for it.
func (a *auditLog) retire() {
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

func (a *auditLog) close() {
	if a.closed.CompareAndSwap(false, true) {
		close(a.quit)
	}
}
