// Package record is one line of the audit trail (server/audit), below the
// call contract (server/call): a call carries the record kept for its
// request (call.Call's Audit), which the trail's stages build and write.
// It is the line's fields alone: building it, bounding it and writing it
// are the trail's (server/audit).
package record

import (
	"encoding/json"
	"time"
)

// Record is one line of the audit trail.
type Record struct {
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
	// ArgumentsBytes and ArgumentsSHA256 stand for arguments larger
	// than the trail keeps: their size and digest, not their value.
	ArgumentsBytes  int    `json:"arguments_bytes,omitempty"`
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Clipped says that a string of the record ends in audit.ClippedMark, cut,
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

	// Missed marks the record of a request that named nothing the client
	// can see (audit.Missed): it keeps neither an error nor a duration.
	Missed bool `json:"-"`
}
