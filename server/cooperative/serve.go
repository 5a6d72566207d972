package cooperative

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Verdict is what the hub decides for a call of a Target now, by the code
// that decides a real one.
type Verdict struct {
	// Found says the client can see the target: a tool its view lists (a
	// deny-list, a profile or a changed pin hides it as if it did not
	// exist), a resource its view routes.
	Found       bool
	Action      config.Action // the policy's decision, when Found
	Rule        string        // the rule that decided, "" for the default
	Description string        // the rule's description
	Rate        *config.RateLimit
	// Grant is a grant that lets the call through now (a prompt rule's
	// call), "" for none. Finding it does not use it.
	Grant string
}

// allowed reports whether a real call would go ahead without asking.
func (v Verdict) allowed() bool {
	return v.Found && (v.Action == config.ActionAllow || v.Action == config.ActionLog || v.Action == config.ActionPrompt && v.Grant != "")
}

// The scopes a grant may be asked for.
const (
	ScopeSession = "session" // every call it covers in the asking session
	ScopeOnce    = "once"    // the next call it covers
)

// Ask is a request for a person's permission.
type Ask struct {
	Scope   string        // ScopeSession or ScopeOnce
	Expires time.Duration // the grant ends this long after it is made; 0: with the session
	Wait    time.Duration // how long to wait for the answer
	// Why is what the person is told: who asks, for what, and why.
	Why string
}

// Grant is a person's answer to an Ask.
type Grant struct {
	ID         string    // the grant made; "" when refused
	ApprovedBy string    // who approved it
	Expires    time.Time // zero: with the session
	Refused    string    // why not, when no grant was made
}

// Entry is what the audit record of a cooperative call says beyond the
// call itself.
type Entry struct {
	Tool string
	// Decision is "cooperative" for a call served, "rate_limited" for one
	// over its tool's limit, "reported" for an agent's report.
	Decision string
	// EventID names an agent's report; Reported marks its record as the
	// agent's own word, never proof that the action happened.
	EventID  string
	Reported bool
	// Report is what the agent reported, each text bounded: kept whatever
	// audit.arguments says, since the report is the record's point (its
	// details are kept with the arguments, as arguments are).
	Report map[string]string
}

// Host is the hub, as the tools use it, for one request of one caller.
type Host interface {
	// Take charges a call to the caller's count of limit (see RateScope),
	// false when it is over: how long until it is not.
	Take(tool string, limit *config.RateLimit) (retryAfter time.Duration, ok bool)
	// Decide is what a real call of t by this caller would be decided
	// now.
	Decide(t Target) Verdict
	// Ask puts t, which a prompt rule leaves to a person (v), to a person
	// the way a prompt rule's call is put for this client, and on yes
	// makes the grant a asks for. An error answers the request as it is
	// (a 2026-07-28 client's input_required round); a no is Grant.Refused.
	Ask(ctx context.Context, t Target, v Verdict, a Ask) (Grant, error)
	// Route is the group, server and name (as its server calls it) of the
	// tool the client calls name (with group in dynamic mode); ok false
	// when the client can see no such tool.
	Route(name, group string) (g, server, tool string, ok bool)
	// Policy is the policy as the caller sees it: the rules of the groups
	// its view shows, and the global ones.
	Policy() View
	// Audit keeps e for the call's audit record; an error refuses the call
	// (audit.required, and the trail fails). trail is false when the hub
	// keeps no audit trail.
	Audit(e Entry) (trail bool, err error)
}

// decisionServed is the audit decision of a cooperative call answered.
const decisionServed = "cooperative"

// Serve answers the cooperative tool name called with args: the
// CallToolResult, or the error to answer the request with.
func Serve(ctx context.Context, h Host, name string, args json.RawMessage) (json.RawMessage, error) {
	if limit := Limit(name); limit != nil {
		if after, ok := h.Take(name, limit); !ok {
			if _, err := h.Audit(Entry{Tool: name, Decision: "rate_limited"}); err != nil {
				return nil, err
			}
			secs := int(after.Round(time.Second) / time.Second)
			return nil, &jsonrpc.Error{Code: CodeRateLimited, Message: fmt.Sprintf("rate limit: %s allows %d calls a minute per caller; retry in %ds", name, limit.Calls, max(secs, 1)),
				Data: map[string]any{"tool": name, "limit": limit.Text, "retryAfter": max(secs, 1)}}
		}
	}
	var answer any
	var err error
	switch name {
	case CheckIntent:
		answer, err = checkIntent(h, args)
	case RequestPermission:
		answer, err = requestPermission(ctx, h, args)
	case ReportAction:
		answer, err = reportAction(h, args)
	case GetPolicy:
		answer, err = getPolicy(h, args)
	default:
		return nil, fmt.Errorf("cooperative: no tool %q", name)
	}
	var p problem
	switch {
	case errors.As(err, &p):
		if _, aerr := h.Audit(Entry{Tool: name, Decision: decisionServed}); aerr != nil {
			return nil, aerr
		}
		return toolError(p.Error()), nil
	case err != nil:
		return nil, err
	}
	return objectResult(answer)
}

// audited records a call served, before its answer is given.
func audited(h Host, name string) error {
	_, err := h.Audit(Entry{Tool: name, Decision: decisionServed})
	return err
}

func toolError(msg string) json.RawMessage {
	b, _ := jsonrpc.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": msg}}, "isError": true})
	return b
}

// objectResult is a CallToolResult carrying the answer as JSON text, as
// the seed answers, and as structuredContent, for clients that read it.
func objectResult(answer any) (json.RawMessage, error) {
	obj, err := jsonrpc.Marshal(answer)
	if err != nil {
		return nil, err
	}
	return jsonrpc.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(obj)}}, "structuredContent": json.RawMessage(obj)})
}

// eventID is a random UUID (version 4), as the seed's event ids are.
func eventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
