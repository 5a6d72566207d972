// Package approval holds what the hub's approval inbox shows and takes:
// the calls a `prompt` policy rule holds for a person's answer, the
// grants that let later calls through without asking, and the options
// an approval creates a grant with. The hub keeps them (server), the
// inspector's API and the shared hub's local socket carry them, and the
// CLI prints them: this package is the one vocabulary of all four.
package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// What an answer names that is not there (answered already, timed out,
// cancelled; revoked, expired, used up).
var (
	ErrNoPending = errors.New("no call waits for approval with that id")
	ErrNoGrant   = errors.New("no grant with that id")
	// ErrNoSession refuses a session grant for a call that came without
	// a session (2026-07-28 over HTTP without Mcp-Session-Id): its caller
	// is the credential, and the grant would never end.
	ErrNoSession = errors.New("this call came without a session: approve it with --for or --calls")
)

// Pending is one call waiting for a person's answer.
type Pending struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Method  string    `json:"method"` // tools/call, resources/read or prompts/get
	Tool    string    `json:"tool"`   // tool or prompt name as its server knows it, or the URI
	Group   string    `json:"group"`
	Server  string    `json:"server"`
	Session string    `json:"session"`
	Client  string    `json:"client,omitempty"` // the client's clientInfo name
	// Arguments are the call's, secrets redacted, cut at a bound (then
	// shown as a JSON string, Clipped set).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsSize is the size of the call's arguments in bytes, whole,
	// as the client sent them.
	ArgumentsSize int `json:"arguments_size,omitempty"`
	// Clipped says Arguments were cut: they show less than the call has.
	Clipped     bool   `json:"clipped,omitempty"`
	Rule        string `json:"rule,omitempty"`
	Description string `json:"description,omitempty"`
	// Deadline is when the call is denied unless answered.
	Deadline time.Time `json:"deadline"`
	// Replica is the replica of the hub where the call waits, with a
	// shared store (store:); "" without.
	Replica string `json:"replica,omitempty"`
}

// Grant lets calls of one tool (method and name) of one server of one
// group through a `prompt` rule without asking: a tool of the same name
// that another server of the group serves is not covered.
type Grant struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// ApprovedBy is who approved: "ui", "cli:USER".
	ApprovedBy string `json:"approved_by"`
	Method     string `json:"method"`
	Tool       string `json:"tool"`
	Group      string `json:"group"`
	Server     string `json:"server"`
	// Session, when set, limits the grant to that client session.
	Session string `json:"session,omitempty"`
	// Args, when set, limits the grant to calls whose arguments match:
	// each key a dotted argument path, each value a glob (as a policy
	// rule's args:, read as an allow rule reads them: every value must
	// match).
	Args map[string]string `json:"args,omitempty"`
	// Expires, when set, is when the grant ends.
	Expires time.Time `json:"expires,omitzero"`
	// CallsLeft, when above zero, is how many more calls it lets through.
	CallsLeft int `json:"calls_left,omitempty"`
	// Used counts the calls it let through.
	Used int `json:"used"`
}

// Options say what grant an approval creates; the zero value creates
// none (the approved call only: "once").
type Options struct {
	// Session grants the tool for the rest of the approved call's session.
	Session bool `json:"session,omitempty"`
	// For grants the tool, in every session, for this long.
	For Duration `json:"for,omitempty"`
	// Calls grants the tool, in every session, for this many more calls.
	Calls int `json:"calls,omitempty"`
	// Args narrows the grant to calls whose arguments match these globs.
	Args map[string]string `json:"args,omitempty"`
}

// Check reports options no approval takes: negative calls or time, or
// args without a grant for them to narrow.
func (o Options) Check() error {
	if o.Calls < 0 || o.For < 0 {
		return errors.New("a grant's calls and time are positive")
	}
	if len(o.Args) > 0 && o.Once() {
		return errors.New("args narrows a grant: give session, for or calls with it")
	}
	return nil
}

// Once reports whether o creates no grant.
func (o Options) Once() bool { return !o.Session && o.For <= 0 && o.Calls <= 0 }

// List is the inbox: the calls waiting and the grants in force.
type List struct {
	Pending []Pending `json:"pending"`
	Grants  []Grant   `json:"grants"`
}

// Duration is a time.Duration written in JSON as "1m30s"; a number is
// read as nanoseconds.
type Duration time.Duration

// MarshalJSON writes d as Go writes a duration.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10m" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("a duration is a string such as \"10m\": %s", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
