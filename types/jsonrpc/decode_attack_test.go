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

// An id whose string is not valid UTF-8 cannot be echoed faithfully: an
// answer carrying its bytes is not valid JSON text (RFC 8259 section 8.1),
// and one with them replaced could name another of the peer's requests.
// Such a message is refused as -32600 with a null id, whatever else it
// holds, and the ids found for answering a message that is cut short or
// broken are never such an id either.
func TestDecodeRefusesIDNotUTF8(t *testing.T) {
	for _, msg := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xc3\",\"method\":\"tools/list\",\"params\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}",       // a surrogate, encoded
		"{\"jsonrpc\":\"2.0\",\"id\":\"\\n\xff\",\"method\":\"ping\"}",            // with an escape too
		"{\"jsonrpc\":\"1.0\",\"id\":\"\xff\",\"method\":\"ping\"}",               // and another fault
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":7}",                      // and another fault
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"\"}",                   // and another fault
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"a\",\"method\":\"b\"}", // a repeated key
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":{}}",
	} {
		_, err := Decode([]byte(msg))
		var de *DecodeError
		if !errors.As(err, &de) || de.Code != CodeInvalidRequest || de.ID != nil {
			t.Errorf("%q: %v, want -32600 without an id", msg, err)
		}
	}
	for _, head := range []string{"{\"id\":\"\xff\",\"method\":\"ping\",\"params\":{\"x\":", "{\"id\":\"\xfe\xff\"}"} {
		if id := IDOf([]byte(head)); id != nil {
			t.Errorf("IDOf(%q) = %q", head, id)
		}
	}
	if id := IDOfTail([]byte("\"x\"},\"id\":\"\xff\"}")); id != nil {
		t.Errorf("IDOfTail = %q", id)
	}
	// Valid UTF-8 of every kind is echoed as written.
	for _, id := range []string{`"é"`, `"\ud800"`, `"日本"`, `"\u00ff"`, `7`} {
		m, err := Decode([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
		if err != nil || string(m.ID) != id {
			t.Errorf("id %s: %v", id, err)
		}
	}
}
