package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	clipText "github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
)

// The parts of a row are kept as the page reads them: encoding/json
// writes them as they are, off the hub's goroutines.

// body is one message body as kept: its bytes, cut at the size cap,
// copied as they came. They are redacted when the page or an export reads
// them (MarshalJSON, on that reader's goroutine), never before: recording
// a call costs the copy alone, and what is shown is the same as if it had
// been redacted when kept. Nothing here decodes it; the page
// pretty-prints it.
type body struct {
	raw   []byte // the original's first max bytes at most, never changed once kept
	whole int    // the original's size, in bytes
	max   int    // the cap, for the redacted text too
}

// shownBody is a body as the page and exports are given it: redacted and
// cut at the cap.
type shownBody struct {
	Text      string `json:"text"`
	Size      int    `json:"size"`                // of the original, in bytes
	Truncated bool   `json:"truncated,omitempty"` // Text is its first bytes only
}

// shown is b redacted and cut at its cap: "[redacted]" is longer than
// many a secret, so the redacted text is cut again.
func (b body) shown() shownBody {
	s := shownBody{Size: b.whole, Truncated: len(b.raw) < b.whole, Text: redact.JSON(b.raw)}
	if len(s.Text) > b.max {
		s.Text, s.Truncated = s.Text[:b.max], true
	}
	return s
}

// MarshalJSON writes b as shown (shownBody): redacted.
func (b body) MarshalJSON() ([]byte, error) { return json.Marshal(b.shown()) }

// String and LogValue are b as shown, redacted: a row printed with fmt or
// logged never shows the kept bytes raw.
func (b body) String() string       { return b.shown().Text }
func (b body) LogValue() slog.Value { return slog.StringValue(b.String()) }

// IsZero reports whether b holds no body (omitzero leaves it out).
func (b body) IsZero() bool { return b.raw == nil }

// rpcError is an error answer as kept.
type rpcError struct {
	Code    int    `json:"code,omitempty"` // 0 for a failure with no JSON-RPC code (a transport's)
	Message string `json:"message"`
	Data    body   `json:"data,omitzero"`
}

// row is one line of the traffic table: a client's request with all that
// happened for it, or a message that came during no request.
type row struct {
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"` // kindRequest or kindMessage

	Session   string    `json:"session,omitempty"`
	User      string    `json:"user,omitempty"` // the caller (traffic.Call.User: jwt:SUBJECT, token:NAME)
	Transport string    `json:"transport,omitempty"`
	Protocol  string    `json:"protocol,omitempty"` // the session's negotiated version
	ID        string    `json:"id,omitempty"`       // the request's id as the client wrote it
	Method    string    `json:"method"`
	Start     time.Time `json:"start"`
	Params    body      `json:"params,omitzero"`

	Group  string `json:"group,omitempty"`
	Server string `json:"server,omitempty"`
	Target string `json:"target,omitempty"` // tool, prompt or resource URI
	Rule   string `json:"rule,omitempty"`
	Action string `json:"action,omitempty"`

	Status string    `json:"status"` // a traffic.Status, or "pending"
	Result body      `json:"result,omitzero"`
	Error  *rpcError `json:"error,omitempty"`
	MS     float64   `json:"ms"` // the duration, in milliseconds

	Hops     []hop     `json:"hops,omitempty"`
	Messages []message `json:"messages,omitempty"`
	Omitted  int       `json:"omitted,omitempty"` // hops and messages past the caps, not kept

	bytes  int  // of the bodies kept, counted against Options.MaxBytes
	inRing bool // still in the history: its bytes count; once out, it keeps nothing more
}

// release lets go of what r kept, as it leaves the history: a request
// still pending is held by its call, which may go on for long, and would
// pin its bodies outside the history's budget. Snapshots already taken
// keep their own copies of the slices.
func (r *row) release() {
	r.inRing = false
	r.Params, r.Result, r.Error, r.Hops, r.Messages = body{}, body{}, nil, nil, nil
	r.bytes = 0
}

// The kinds of rows.
const (
	kindRequest = "request"
	kindMessage = "message"
)

// statusPending is the status of a request not answered yet.
const statusPending = "pending"

// hop is one request the hub sent an upstream for a row's request.
type hop struct {
	Group     string    `json:"group"`
	Server    string    `json:"server"`
	Transport string    `json:"transport,omitempty"`
	Protocol  string    `json:"protocol,omitempty"`
	Method    string    `json:"method"`
	Start     time.Time `json:"start"`
	Params    body      `json:"params,omitzero"`
	Result    body      `json:"result,omitzero"`
	Error     *rpcError `json:"error,omitempty"`
	MS        float64   `json:"ms"`
}

// message is a notification, or an upstream's request to the client with
// its answer.
type message struct {
	Time      time.Time `json:"time"`
	Direction string    `json:"direction"`
	Session   string    `json:"session,omitempty"`
	Server    string    `json:"server,omitempty"`
	Method    string    `json:"method"`
	Request   bool      `json:"request,omitempty"`
	Params    body      `json:"params,omitzero"`
	Result    body      `json:"result,omitzero"`
	Error     *rpcError `json:"error,omitempty"`
	MS        float64   `json:"ms,omitempty"`
}

// The caps of one row, so that a call that sends thousands of progress
// notifications cannot take the history's memory for itself.
const (
	maxHops     = 16
	maxMessages = 64
)

// keep is b as the history keeps it: cut at max bytes, redacted when
// read (see body); the zero body for none. It copies, for b belongs to
// the hub.
func keep(b []byte, max int) body {
	if len(b) == 0 {
		return body{}
	}
	return body{raw: bytes.Clone(b[:min(len(b), max)]), whole: len(b), max: max}
}

// keepBoth is keep of a and of b, copied into one buffer (a hop's params
// and result: an allocation a hop less). Neither is written to after.
func keepBoth(a, b []byte, max int) (body, body) {
	ca, cb := a[:min(len(a), max)], b[:min(len(b), max)]
	if len(ca) == 0 || len(cb) == 0 {
		return keep(a, max), keep(b, max)
	}
	buf := make([]byte, len(ca)+len(cb))
	n := copy(buf, ca)
	copy(buf[n:], cb)
	return body{raw: buf[:n:n], whole: len(a), max: max}, body{raw: buf[n:], whole: len(b), max: max}
}

// maxName caps what is kept of a method, a request id or a target as a
// client wrote it, which no list bounds: a client may send one of
// megabytes.
const maxName = 1024

// clip is s cut at max bytes, marked with an ellipsis when it was cut.
func clip(s string, max int) string {
	return clipText.Marked(s, max, "…")
}

// size is the bytes b holds.
func (b body) size() int { return len(b.raw) }

// keepError is err as the client or the hub saw it; nil for none. A
// JSON-RPC error keeps its code and data; any other failure (a
// transport's) only its text. asClient makes every error a JSON-RPC
// one, as the hub answers the client with.
func keepError(err error, max int, asClient bool) *rpcError {
	if err == nil {
		return nil
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		if !asClient {
			return &rpcError{Message: redact.Text(clip(err.Error(), max))}
		}
		je = jsonrpc.ToError(err)
	}
	// The message, an upstream's words, may be of any size and name a
	// URL with its credentials.
	e := &rpcError{Code: je.Code, Message: redact.Text(clip(je.Message, max))}
	switch d := je.Data.(type) {
	case nil:
	case json.RawMessage:
		e.Data = keep(d, max)
	default:
		if b, err := json.Marshal(d); err == nil {
			e.Data = keep(b, max)
		}
	}
	return e
}

func (e *rpcError) size() int {
	if e == nil {
		return 0
	}
	return len(e.Message) + e.Data.size()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// snapshot is a copy of r that later changes to r do not touch: the
// bodies are never changed once kept, and hops and messages are only
// appended to. The caller holds the inspector's lock.
func (r *row) snapshot() *row {
	c := *r
	c.Hops = r.Hops[:len(r.Hops):len(r.Hops)]
	c.Messages = r.Messages[:len(r.Messages):len(r.Messages)]
	return &c
}

// outcome is a snapshot of r's outcome and routing, without the hops and
// messages the page already has.
func (r *row) outcome() *row {
	c := *r
	c.Params, c.Hops, c.Messages = body{}, nil, nil
	c.bytes = c.Result.size() + c.Error.size() + len(c.Target)
	return &c
}
