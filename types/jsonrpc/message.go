package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Message is one JSON-RPC message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID and Result or Error).
// ID, Params and Result stay raw bytes of the message as received, so
// the hub answers with exactly the id it was sent and passes results on
// without re-encoding them.
type Message struct {
	ID     json.RawMessage // nil for a notification
	Method string
	Params json.RawMessage // nil when absent
	Result json.RawMessage
	Error  *Error
	Raw    []byte // the whole message

	failed error // set by Calls.Fail: why the answer could not be taken
}

// IsRequest reports whether m expects an answer.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m answers a request.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// DecodeError says why a message was refused, with the JSON-RPC code to
// answer with and, where it is not in doubt, the message's id.
type DecodeError struct {
	Code int
	ID   json.RawMessage // nil when unknown
	Err  error
}

func (e *DecodeError) Error() string {
	switch {
	case errors.Is(e.Err, ErrBatch):
		return e.Err.Error()
	case e.Code == CodeParseError:
		return "Parse error: " + e.Err.Error()
	}
	return "Invalid Request: " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Errors Decode reports besides those of Check.
var (
	ErrBatch      = errors.New("batch requests are not supported")
	ErrNotMessage = errors.New("not a JSON-RPC request, notification or response")
	ErrVersion    = errors.New(`jsonrpc must be "2.0"`)
	ErrNullID     = errors.New("a request's id must be a string or a number, not null")
	ErrBadID      = errors.New("id must be a string or a number")
	ErrIDNotUTF8  = errors.New("id must be valid UTF-8")
	ErrBadMethod  = errors.New("method must be a string")
)

// envelope holds the spans of the top-level members Decode looks at,
// filled in by the checker as it walks the message.
type envelope struct {
	jsonrpc, id, method, params, result, err []byte
}

func (e *envelope) set(key, value []byte) {
	switch string(key) {
	case "jsonrpc":
		e.jsonrpc = value
	case "id":
		e.id = value
	case "method":
		e.method = value
	case "params":
		e.params = value
	case "result":
		e.result = value
	case "error":
		e.err = value
	}
}

// Decode applies the framing rules of Check and reads the envelope of one
// message in a single pass. The message keeps b (it is not copied). A
// refused message comes back as a *DecodeError.
func Decode(b []byte) (*Message, error) {
	if hook := decodeHook.Load(); hook != nil { // a test's count (DecodeHook)
		(*hook)(b)
	}
	c := checker{b: b, maxDepth: MaxDepth, decoding: true}
	c.space()
	start := c.i // a body may begin with white space
	if start < len(b) && b[start] == '[' {
		return nil, &DecodeError{Code: CodeInvalidRequest, Err: ErrBatch}
	}
	err := c.value(0)
	if err == nil {
		c.space()
		if c.i != len(c.b) {
			err = c.fail(ErrNotJSON)
		}
	}
	if err != nil {
		return nil, refusal(b, err)
	}
	env := &c.top
	if start >= len(b) || b[start] != '{' {
		return nil, &DecodeError{Code: CodeInvalidRequest, Err: ErrNotMessage}
	}
	m := &Message{Raw: b, Params: env.params, Result: env.result}
	if len(m.Params) > 0 && string(m.Params) == "null" {
		m.Params = nil
	}
	id := env.id
	if id != nil && string(id) != "null" {
		if id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			return nil, &DecodeError{Code: CodeInvalidRequest, Err: ErrBadID}
		}
		if !echoable(id) {
			return nil, &DecodeError{Code: CodeInvalidRequest, Err: ErrIDNotUTF8}
		}
		m.ID = id
	}
	if env.method != nil {
		if env.method[0] != '"' {
			return nil, &DecodeError{Code: CodeInvalidRequest, ID: m.ID, Err: ErrBadMethod}
		}
		m.Method = unquote(env.method)
	}
	if m.Method == "" && m.ID == nil && string(env.id) == "null" && env.err != nil {
		// An error about a message the peer could not read: a response to
		// no request, taken (and dropped) as such, never answered.
		m.ID = json.RawMessage("null")
	}
	switch {
	case m.Method != "" && env.id != nil && m.ID == nil:
		return nil, &DecodeError{Code: CodeInvalidRequest, ID: id, Err: ErrNullID}
	case m.IsRequest():
		if string(env.jsonrpc) != `"2.0"` {
			return nil, &DecodeError{Code: CodeInvalidRequest, ID: m.ID, Err: ErrVersion}
		}
	case m.IsNotification():
	case m.ID != nil && (env.result != nil || env.err != nil):
		if env.err != nil {
			var e struct {
				Code    *int            `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}
			if json.Unmarshal(env.err, &e) != nil || e.Code == nil {
				m.Error = &Error{Code: CodeInternalError, Message: "malformed error: " + string(env.err)}
			} else {
				m.Error = &Error{Code: *e.Code, Message: e.Message}
				if len(e.Data) > 0 {
					m.Error.Data = e.Data
				}
			}
		}
	case env.method != nil:
		// A request with an empty method: refused with its id, which
		// could be read (a message without a method may be a response,
		// and keeps a null id: no error answers an error).
		return nil, &DecodeError{Code: CodeInvalidRequest, ID: m.ID, Err: ErrNotMessage}
	default:
		return nil, &DecodeError{Code: CodeInvalidRequest, Err: ErrNotMessage}
	}
	return m, nil
}

// echoable reports whether id can be sent back as it came: an answer is
// valid JSON text only in UTF-8 (RFC 8259 section 8.1), and an id with its
// invalid bytes replaced could name another request of the peer's, so
// such an id is refused and answered as unreadable (null).
func echoable(id []byte) bool { return utf8.Valid(id) }

// unquote returns the text of a JSON string literal: one of
// commonMethods without allocating, when it is one.
func unquote(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 {
		text := lit[1 : len(lit)-1]
		for _, m := range commonMethods {
			if string(text) == m {
				return m
			}
		}
		return string(text)
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// commonMethods are the methods of the messages a hub reads most, a
// call's and what is sent while it runs: Decode gives them without a
// copy of their own (an allocation a message).
var commonMethods = [...]string{"tools/call", "resources/read", "prompts/get", "notifications/progress",
	"notifications/message", "notifications/cancelled"}

// refusal wraps a framing failure: -32700 when the message is not JSON,
// -32600 when too deep or with a repeated key. It carries the message's id
// unless the id itself is what is in doubt.
func refusal(b []byte, err error) *DecodeError {
	if errors.Is(err, ErrNotJSON) {
		return &DecodeError{Code: CodeParseError, Err: err}
	}
	var id json.RawMessage
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Depth != 1 || !bytes.EqualFold([]byte(ce.Key), []byte("id")) {
		id = IDOf(b)
	}
	return &DecodeError{Code: CodeInvalidRequest, ID: id, Err: err}
}

// EncodeResult frames a raw result for id without re-encoding either.
func EncodeResult(id, result json.RawMessage) []byte {
	b := make([]byte, 0, len(id)+len(result)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// EncodeError frames an error answer; a nil id is sent as null, as the
// spec asks when the id could not be read.
func EncodeError(id json.RawMessage, e *Error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"error":`)
	e.appendJSON(&b)
	b.WriteByte('}')
	return b.Bytes()
}

// EncodeNotification frames a notification, leaving out absent params.
func EncodeNotification(method string, params json.RawMessage) []byte {
	b := make([]byte, 0, len(method)+len(params)+40)
	b = append(b, `{"jsonrpc":"2.0"`...)
	return appendCall(b, method, params)
}

func appendCall(b []byte, method string, params json.RawMessage) []byte {
	b = AppendString(append(b, `,"method":`...), method)
	if len(params) > 0 && string(params) != "null" {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// AppendString appends s to b as Marshal writes it. A string written as
// it is, between quotes (plainMethod: every MCP method, most tool names),
// is appended without Marshal's encoder, 3 allocations and a reflection
// a message (issue 33).
func AppendString(b []byte, s string) []byte {
	if plainMethod(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	return append(b, marshalOrNull(s)...)
}

// plainMethod reports whether method is written in JSON as it is, between
// quotes: every MCP method is (letters, digits, '/', '_', '-', '.', '$').
func plainMethod(method string) bool {
	for i := 0; i < len(method); i++ {
		switch c := method[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '/', c == '_', c == '-', c == '.', c == '$':
		default:
			return false
		}
	}
	return true
}

// IntID is the id of the n-th request a connection sends.
func IntID(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

// Params encodes v for a message's params: raw bytes pass as they are,
// nil stays absent.
func Params(v any) (json.RawMessage, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	case []byte:
		return p, nil
	}
	b, err := Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	return b, nil
}
