package audit

import (
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit/record"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
)

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
