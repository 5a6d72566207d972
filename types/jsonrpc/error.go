package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeServerBusy answers a request over a connection's in-flight limit
	// (in the range JSON-RPC leaves to implementations).
	CodeServerBusy = -32000
	// CodeResourceNotFound is MCP's code for resources/read of an unknown URI.
	CodeResourceNotFound = -32002
)

// Error is a JSON-RPC error object, the one wire error type on both sides
// of the hub. Data that is a json.RawMessage is sent byte for byte, so an
// upstream's error passes through unchanged.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf is an Error with no data.
func Errorf(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// ToError is the one place any error becomes what a peer is told: an
// *Error passes through, anything else is an internal error with its text.
func ToError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return &Error{Code: de.Code, Message: de.Error()}
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// appendJSON writes e without HTML escaping and with raw data as is.
func (e *Error) appendJSON(b *bytes.Buffer) {
	b.WriteString(`{"code":`)
	b.WriteString(strconv.Itoa(e.Code))
	b.WriteString(`,"message":`)
	b.Write(marshalOrNull(e.Message))
	switch d := e.Data.(type) {
	case nil:
	case json.RawMessage:
		if len(d) > 0 {
			b.WriteString(`,"data":`)
			b.Write(d)
		}
	default:
		b.WriteString(`,"data":`)
		b.Write(marshalOrNull(d))
	}
	b.WriteByte('}')
}

// MarshalJSON encodes e as appendJSON does.
func (e *Error) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	e.appendJSON(&b)
	return b.Bytes(), nil
}

// marshalOrNull is Marshal for values that cannot fail to encode; one
// that does becomes null.
func marshalOrNull(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}
