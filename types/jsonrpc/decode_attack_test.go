package jsonrpc

import (
	"errors"
	"testing"
)

// A request with an empty method is refused with its own id, so that the
// client learns which of its requests failed (JSON-RPC 2.0 section 5: the
// id is null only when it could not be detected); a message that may be a
// response keeps a null id, so that two peers never bounce errors.
func TestDecodeRefusalKeepsTheRequestsID(t *testing.T) {
	for msg, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":""}`:   `7`,
		`{"jsonrpc":"2.0","id":"x","method":""}`: `"x"`,
		`{"jsonrpc":"2.0","id":7}`:               ``,
		`{"jsonrpc":"2.0","method":""}`:          ``,
	} {
		_, err := Decode([]byte(msg))
		var de *DecodeError
		if !errors.As(err, &de) || de.Code != CodeInvalidRequest {
			t.Errorf("%s: %v", msg, err)
			continue
		}
		if string(de.ID) != want {
			t.Errorf("%s: refused with id %q, want %q", msg, de.ID, want)
		}
	}
}
