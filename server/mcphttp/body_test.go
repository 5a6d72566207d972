package mcphttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
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

// A POST cut short, its client stopping (the body timeout then passes) or
// closing its side, is refused with the id of the part read: the client
// can tell which request was cut, as it can for one over the size limit.
func TestHTTPBodyCutShortCarriesItsID(t *testing.T) {
	t.Parallel()
	_, ts := serveHTTPWith(t, fakeHub(t), Options{BodyTimeout: time.Second})
	const part = `{"jsonrpc":"2.0","id":"cut-7","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"`
	for _, tc := range []struct {
		name  string
		close bool // the client closes its side after the part; else it stops
		want  int
	}{
		{"stops", false, http.StatusRequestTimeout},
		{"closes", true, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			fmt.Fprintf(nc, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n%s", part)
			if tc.close {
				nc.(*net.TCPConn).CloseWrite()
			}
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), `"id":"cut-7"`) {
				t.Errorf("%d %s, want %d with the id", resp.StatusCode, body, tc.want)
			}
		})
	}
}
