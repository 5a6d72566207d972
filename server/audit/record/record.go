// Package record is one line of the audit trail (server/audit), below the
// call contract (server/call): a call carries the record kept for its
// request (call.Call's Audit), which the trail's stages build and write.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
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
	// ArgumentsBytes and ArgumentsSHA256 stand for arguments over
	// MaxArguments: their size and digest, not their value.
	ArgumentsBytes  int    `json:"arguments_bytes,omitempty"`
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Clipped says that a string of the record ends in ClippedMark, cut,
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

	// missed marks the record of a request that named nothing the client
	// can see (Missed): it keeps neither an error nor a duration (Ended).
	missed bool
}

// What a client writes reaches a record (a tool, prompt or resource name
// it may invent, an error that quotes one, its arguments), and a line is
// written for every call: so each is bounded where the record is kept
// (Write), lest a client that names a tool of megabytes grow the trail by
// megabytes a call.
const (
	// maxText bounds each string of a record, as spans' attributes
	// are bounded; a string cut ends in ClippedMark.
	maxText = 1 << 10
	// MaxArguments bounds the arguments kept (audit.arguments), as
	// the client encoded them; larger ones are kept as their size and
	// SHA-256 digest, which tell the same call again.
	MaxArguments = 4 << 10
)

// ClippedMark ends a string of a record that was cut.
const ClippedMark = "…"

// Clip bounds what r holds of what the client wrote (see maxText
// and MaxArguments), marking r clipped where it cut.
func (r *Record) Clip() {
	for _, s := range []*string{&r.Session, &r.User, &r.Subject, &r.Group, &r.Server, &r.Method, &r.Tool, &r.URI, &r.Prompt, &r.Decision, &r.Rule, &r.Outcome, &r.Error} {
		if len(*s) > maxText {
			*s = clip.Marked(*s, maxText, ClippedMark)
			r.Clipped = true
		}
	}
	if len(r.Arguments) > MaxArguments {
		sum := sha256.Sum256(r.Arguments)
		r.ArgumentsBytes, r.ArgumentsSHA256 = len(r.Arguments), hex.EncodeToString(sum[:])
		r.Arguments = nil
		r.Clipped = true
	}
}

// Missed is the record of a tool call in session that named no tool the
// client can see.
func Missed(session, name string, args json.RawMessage) *Record {
	return &Record{Time: time.Now().UTC(), Session: session, Method: policy.MethodToolsCall, Tool: name,
		Decision: "not_found", Arguments: args, missed: true}
}

// Ended completes r once its request is answered: with its outcome (a
// traffic.Status, decided once for every observer), the hub's own failure
// that a tool error result reported, else the error it was answered with,
// and how long it took. The record of a request that named nothing the
// client can see (Missed) keeps neither the error nor a duration.
func (r *Record) Ended(outcome, failure string, err error) {
	r.Outcome = outcome
	switch {
	case failure != "":
		r.Error = failure
	case err != nil && !r.missed:
		r.Error = err.Error()
	}
	if !r.missed {
		r.DurationMS = float64(time.Since(r.Time).Microseconds()) / 1000
	}
}
