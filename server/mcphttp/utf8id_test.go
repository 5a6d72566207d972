package mcphttp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every byte the hub answers a POST with is valid JSON in UTF-8, whatever
// invalid UTF-8 the client sent: a request whose id is not valid UTF-8 is
// refused as -32600 with a null id, with a session or without, and so is
// one over the size limit whose id can be read but not echoed.
func TestHTTPWritesOnlyUTF8(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "max_message_size: 4KiB", ""), nil)
	_, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	bodies := []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xc3\",\"method\":\"tools/call\",\"params\":{\"name\":\"f__echo\",\"arguments\":{\"text\":\"x\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"a\",\"method\":\"b\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/call\",\"params\":{\"name\":\"" + strings.Repeat("x", 8<<10) + "\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"no/such\xfe\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\xfe\"}}",
	}
	for _, session := range []bool{true, false} {
		for i, b := range bodies {
			cl := c
			if !session {
				cl = &httpClient{t: t, base: ts.URL}
			}
			resp, got := cl.post(b)
			if !utf8.ValidString(got) {
				t.Errorf("session %v, body %d: %d, an answer not in UTF-8: %q", session, i, resp.StatusCode, got)
			}
			if j, ok := strings.CutPrefix(got, "event: message\ndata: "); ok {
				got = strings.TrimSpace(j)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("session %v, body %d: %d, an answer not JSON: %q", session, i, resp.StatusCode, got)
			}
			if i < 4 && !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`) {
				t.Errorf("session %v, body %d: %d %q, want -32600 with a null id", session, i, resp.StatusCode, got)
			}
		}
	}
}
