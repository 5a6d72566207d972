package mcphttp

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// closeCounting is a request body that counts its Close calls.
type closeCounting struct {
	io.Reader
	closed int
}

func (c *closeCounting) Close() error { c.closed++; return nil }

// A body read to its end is closed, so that net/http has nothing to drain
// before the response; a body read only up to the limit (over it) is left
// open, for net/http to drain or to close the connection over.
func TestReadBodyClosesABodyReadToItsEnd(t *testing.T) {
	const limit = 16
	for _, tc := range []struct {
		name   string
		body   string
		length int64 // -1: unknown (chunked)
		closed bool
	}{
		{"known length", `{"a":1}`, 7, true},
		{"unknown length", `{"a":1}`, -1, true},
		{"unknown length at the limit", strings.Repeat("x", limit), -1, true},
		{"unknown length over the limit", strings.Repeat("x", 4*limit), -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			body := &closeCounting{Reader: strings.NewReader(tc.body)}
			r.Body, r.ContentLength = body, tc.length
			b := &bodyReader{timeout: time.Minute}
			got, err := b.readBody(httptest.NewRecorder(), r, limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(len(tc.body), limit+1); len(got) != want {
				t.Fatalf("read %d bytes, want %d", len(got), want)
			}
			if closed := body.closed > 0; closed != tc.closed {
				t.Fatalf("body closed: %v, want %v", closed, tc.closed)
			}
		})
	}
}
