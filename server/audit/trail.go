package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit/record"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file is the trail as a request meets it, the audit trail's one
// stage on a call's path: the request holds the trail (Hold), the call
// stage admits the call and builds its record (Stage), the request stage
// completes it once the request is answered and hands it to the trail's
// writer (Writer, Trail.Write), which queues its line. Writing it to
// disk is the writer's, a goroutine of its own, off the call's path
// (file.go).

// Stage is the audit trail's stage of the call chain, outermost: it
// admits a call (audit.required refuses every call while the trail
// fails: nothing unaudited) and builds its record from what the stages
// after it decided, kept on the call for its request (call.Call's
// Audit). The record is written by Writer, the trail's stage of the
// request chain, once the request's outcome is known; the trail's one
// writer writes it.
type Stage struct {
	Trail *Trail // the snapshot's, nil when the trail is off
}

// Handle admits c, passes it on, and keeps its record on it (NewRecord).
func (s Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if s.Trail == nil { // off: nothing to admit or record
		return next.Handle(ctx, c)
	}
	if err := s.Trail.Admit(); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := next.Handle(ctx, c)
	c.Audit = NewRecord(start, c)
	return res, err
}

// Record is one line of the audit trail (server/audit/record, below the
// call contract: a call carries its request's, call.Call's Audit).
type Record = record.Record

// NewRecord is the record of c, begun at start, from what the stages
// decided about it (its verdict, rule and approval).
func NewRecord(start time.Time, c *call.Call) *Record {
	rec := &Record{Time: start.UTC(), Session: c.Session.ID(), Group: c.Server.Group, Server: c.Server.Name,
		Method: c.Method, Decision: c.Notes.Verdict, Rule: c.Decision.Rule, Arguments: c.Args,
		Grant: c.Notes.Grant, ApprovedBy: c.Notes.ApprovedBy}
	switch c.Method {
	case policy.MethodToolsCall:
		rec.Tool = c.Name
	case policy.MethodResourcesRead, policy.MethodSkillsGet, policy.MethodDirectoryRead:
		rec.URI = c.Name
	case policy.MethodPromptsGet:
		rec.Prompt = c.Name
	}
	return rec
}

// Missed is the record of a tool call in session that named no tool the
// client can see: it keeps neither an error nor a duration (Writer).
func Missed(session, name string, args json.RawMessage) *Record {
	return &Record{Time: time.Now().UTC(), Session: session, Method: policy.MethodToolsCall, Tool: name,
		Decision: "not_found", Arguments: args, Missed: true}
}

// Writer is the audit trail's stage of the request chain, outermost: it
// writes the record kept for a request (by Stage for a call routed
// upstream, or by the hub for a tool not found, a kept result read, an
// agent's report) once the request is answered, completed with its
// outcome. It is outside the result budget and the era's decoration,
// which change the answer: the outcome is that of the answer the client
// gets, decided once, where the request is answered, for every observer
// (Outcome).
type Writer struct {
	Trail *Trail // the snapshot's
	// Outcome is the outcome (a traffic.Status) of c's request, answered
	// with res and err: decided once, by the hub, for every observer.
	Outcome func(ctx context.Context, c *call.Call, res json.RawMessage, err error) string
}

// Handle passes c on and writes its request's record (c.Audit), completed
// with who made it, the outcome, the hub's own failure that a tool error
// result reported, else the error it was answered with, and how long it
// took (the record of a request that named nothing the client can see,
// Missed, keeps neither the error nor a duration). A record the trail
// cannot take under audit.required fails the request: no answer without
// its record.
func (s Writer) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	res, err := next.Handle(ctx, c)
	rec := c.Audit
	if rec == nil {
		return res, err
	}
	rec.Outcome = s.Outcome(ctx, c, res, err)
	rec.User, rec.Subject = c.Session.User(), c.Session.UserKey()
	switch {
	case c.Failure != "":
		rec.Error = c.Failure
	case err != nil && !rec.Missed:
		rec.Error = err.Error()
	}
	if !rec.Missed {
		rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
	}
	if werr := s.Trail.Write(*rec); werr != nil { // a loss is counted and logged by the trail
		return nil, werr
	}
	return res, err
}

// What a client writes reaches a record (a tool, prompt or resource name
// it may invent, an error that quotes one, its arguments), and a line is
// written for every call: so each is bounded where the record is handed
// to the writer (bound), lest a client that names a tool of megabytes grow
// the trail by megabytes a call.
const (
	// maxText bounds each string of a record, as spans' attributes
	// are bounded; a string cut ends in ClippedMark.
	maxText = 1 << 10
	// maxArguments bounds the arguments kept (audit.arguments), as
	// the client encoded them; larger ones are kept as their size and
	// SHA-256 digest, which tell the same call again.
	maxArguments = 4 << 10
)

// ClippedMark ends a string of a record that was cut.
const ClippedMark = "…"

// bound bounds what r holds of what the client wrote (see maxText
// and maxArguments), marking r clipped where it cut.
func bound(r *Record) {
	for _, s := range []*string{&r.Session, &r.User, &r.Subject, &r.Group, &r.Server, &r.Method, &r.Tool, &r.URI, &r.Prompt, &r.Decision, &r.Rule, &r.Outcome, &r.Error, &r.Grant, &r.ApprovedBy, &r.Event} {
		if len(*s) > maxText {
			*s = clip.Marked(*s, maxText, ClippedMark)
			r.Clipped = true
		}
	}
	if len(r.Arguments) > maxArguments {
		sum := sha256.Sum256(r.Arguments)
		r.ArgumentsBytes, r.ArgumentsSHA256 = len(r.Arguments), hex.EncodeToString(sum[:])
		r.Arguments = nil
		r.Clipped = true
	}
}

const (
	// queueLen is how many records may wait for the writer.
	queueLen = 1024
	// queueWait is how long a call waits for room in a full queue
	// (a disk slower than the calls), and with audit.required for its
	// record to be written, before the record counts as lost.
	queueWait = time.Second
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
// (run, file.go) from a bounded queue, several lines a write, so that no call waits
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

// entry is one line on its way to the file; done, when not nil,
// gets the outcome of its write.
type entry struct {
	line []byte
	done chan error
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
	bound(&r)
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
