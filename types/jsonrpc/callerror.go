package jsonrpc

import (
	"encoding/json"
	"fmt"
)

// CallError, returned by a Stream's Read, fails the pending call with ID
// with Err (an HTTP upstream that refused the POST of a request); reading
// goes on.
//
// Stand-in until the wire branch brings the Conn that acts on it.
type CallError struct {
	ID  json.RawMessage
	Err error
}

func (e *CallError) Error() string { return fmt.Sprintf("call %s: %v", e.ID, e.Err) }

func (e *CallError) Unwrap() error { return e.Err }
