package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit/record"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
)

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

// ClippedMark ends a string of a record that was cut.
const ClippedMark = record.ClippedMark

// Missed is the record of a tool call in session that named no tool the
// client can see.
var Missed = record.Missed

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

// Writer is the audit trail's stage of the request chain, outermost: it
// writes the record kept for a request (by Stage for a call routed
// upstream, or by the hub for a tool not found, a kept result read, an
// agent's report) once the request is answered, completed with its
// outcome (Ended). It is outside the result budget and the era's
// decoration, which change the answer: the outcome is that of the answer
// the client gets, decided once, where the request is answered, for every
// observer (Outcome).
type Writer struct {
	Trail *Trail // the snapshot's
	// Outcome is the outcome (a traffic.Status) of c's request, answered
	// with res and err: decided once, by the hub, for every observer.
	Outcome func(ctx context.Context, c *call.Call, res json.RawMessage, err error) string
}

// Handle passes c on and writes its request's record (c.Audit), completed
// with who made it and the outcome. A record the trail cannot take under
// audit.required fails the request: no answer without its record.
func (s Writer) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	res, err := next.Handle(ctx, c)
	rec := c.Audit
	if rec == nil {
		return res, err
	}
	outcome := s.Outcome(ctx, c, res, err)
	rec.User, rec.Subject = c.Session.User(), c.Session.UserKey()
	rec.Ended(outcome, c.Failure, err)
	if werr := s.Trail.Write(*rec); werr != nil { // a loss is counted and logged by the trail
		return nil, werr
	}
	return res, err
}
