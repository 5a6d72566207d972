package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ErrNotAnswer is wrapped by the error of a call whose POST the server
// answered with an application/json body that is not the call's answer:
// not JSON, a batch, some other value, the answer to another request, a
// request or a notification. That body is the only place the answer can
// come (2025-11-25, basic/transports: "a single JSON object", the
// response), so the call fails at once instead of at its timeout; the
// server is up and answered, so its other calls go on.
var ErrNotAnswer = errors.New("a JSON body that is not its answer")

// jsonAnswer checks body, the application/json body of the POST of the
// request with id, for being that request's answer: nil when it is (the
// Conn then resolves the call with it), else an error wrapping
// ErrNotAnswer that says what the body is instead. Decode is the Conn's
// own check, so a body let through here is one the Conn takes.
func jsonAnswer(body []byte, id json.RawMessage) error {
	m, err := jsonrpc.Decode(body)
	var what string
	switch {
	case err == nil && m.IsResponse() && bytes.Equal(m.ID, id):
		return nil
	case errors.Is(err, jsonrpc.ErrBatch):
		what = "a batch, which no version since 2025-06-18 allows"
	case errors.Is(err, jsonrpc.ErrNotJSON):
		what = fmt.Sprintf("not JSON: %q", bodyStart(body))
	case err != nil:
		what = "not a JSON-RPC message: " + errors.Unwrap(err).Error() // what Decode found, without the JSON-RPC code's name
	case m.IsRequest():
		what = fmt.Sprintf("a request, %q, instead of an answer", bodyStart([]byte(m.Method)))
	case m.IsNotification():
		what = fmt.Sprintf("a notification, %q, instead of an answer", bodyStart([]byte(m.Method)))
	default:
		what = "the answer to another request, id " + bodyStart(m.ID)
	}
	return fmt.Errorf("%w (%s)", ErrNotAnswer, what)
}

// bodyStart is the first bytes of b, to name what it is in an error.
func bodyStart(b []byte) string { return clip.String(string(b[:min(len(b), 256)]), 64) }
