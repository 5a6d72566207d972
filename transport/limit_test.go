package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// eventBody and wholeBody are limitTransport's bodies over data, read in
// chunks of at most chunk bytes.
func eventBody(data string, limit, chunk int) io.ReadCloser {
	return &eventLimitBody{body: io.NopCloser(&chunkReader{r: strings.NewReader(data), n: chunk}), limit: limit, blank: true,
		over: func(event bool) error { return &tooLargeError{limit: limit, event: event, status: 200} }}
}

func wholeBody(data string, limit, chunk int) io.ReadCloser {
	return &bodyLimitBody{body: io.NopCloser(&chunkReader{r: strings.NewReader(data), n: chunk}), left: limit,
		over: func(event bool) error { return &tooLargeError{limit: limit, event: event, status: 200} }}
}

// chunkReader returns at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestEventLimit(t *testing.T) {
	const limit = 16
	long := strings.Repeat("x", limit)
	for _, tc := range []struct {
		name, data string
		ok         bool
	}{
		{"events within the limit, more in all", "data: 0123456\n\ndata: 0123456\r\n\r\ndata: 0123456\n\n", true},
		{"an event of exactly the limit", "data: 012345678\n\n", true},
		{"one byte over", "data: 0123456789\n\n", false},
		{"a line with no end", "data: " + long, false},
		{"lines of one event", "data: 01234\ndata: 01234\n\n", false},
		{"comments count", ": 0123456789\ndata: x\n\n", false},
		{"lines of nothing but CRs end an event", long[:10] + "\n\r\r\n" + long[:10] + "\n\r\n", true},
		// mcp-go reads up to LF: lone CRs end no line, so no event.
		{"lone CRs end nothing", "data: 0\r\rdata: 1\r\rdata: 2\r\r", false},
		{"CRs with no end", "data: 0\n" + strings.Repeat("\r", limit), false},
	} {
		for _, chunk := range []int{1, 3, 4096} {
			b, err := io.ReadAll(eventBody(tc.data, limit, chunk))
			if tc.ok && (err != nil || string(b) != tc.data) {
				t.Errorf("%s, chunks of %d: %q, %v", tc.name, chunk, b, err)
			}
			if !tc.ok && (!errors.Is(err, ErrTooLarge) || !strings.HasPrefix(tc.data, string(b))) {
				t.Errorf("%s, chunks of %d: %q, %v; want the limit's error", tc.name, chunk, b, err)
			}
		}
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 16
	for _, chunk := range []int{1, 5, 4096} {
		if b, err := io.ReadAll(wholeBody(strings.Repeat("x", limit), limit, chunk)); err != nil || len(b) != limit {
			t.Errorf("chunks of %d, at the limit: %d bytes, %v", chunk, len(b), err)
		}
		b, err := io.ReadAll(wholeBody(strings.Repeat("x", limit+1), limit, chunk))
		if !errors.Is(err, ErrTooLarge) || len(b) != limit || err.Error() != "upstream response over the 16 byte limit (settings.max_message_size)" {
			t.Errorf("chunks of %d, one over: %d bytes, %v", chunk, len(b), err)
		}
	}
	// An empty read at the limit is not the end.
	r := &bodyLimitBody{body: io.NopCloser(iotest.DataErrReader(strings.NewReader("xy"))), left: 2}
	if b, err := io.ReadAll(r); err != nil || string(b) != "xy" {
		t.Errorf("%q, %v", b, err)
	}
}

// overEvent reports whether data, read as mcp-go reads an event stream,
// has an event of more than limit bytes: eventLimitBody a line at a time.
func overEvent(data string, limit int) bool {
	n := 0
	for line := range strings.Lines(data) {
		text, ended := strings.CutSuffix(line, "\n")
		n += len(text)
		if n > limit {
			return true
		}
		switch {
		case !ended:
		case strings.Trim(text, "\r") == "":
			n = 0
		default:
			if n++; n > limit {
				return true
			}
		}
	}
	return false
}

func FuzzEventLimit(f *testing.F) {
	f.Add("data: 0123456\n\ndata: 0123456\r\n\r\n", 16, 3)
	f.Add("data: 0\r\rdata: 1\r\r", 8, 1)
	f.Add(":\n\n\n\r\r\n", 1, 2)
	f.Fuzz(func(t *testing.T, data string, limit, chunk int) {
		if limit < 1 || limit > 1<<10 || chunk < 1 {
			t.Skip()
		}
		b, err := io.ReadAll(eventBody(data, limit, chunk))
		if !strings.HasPrefix(data, string(b)) {
			t.Fatalf("read %q, not a prefix of the stream", b)
		}
		if over := overEvent(data, limit); over != (err != nil) || err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("over %v, error %v", over, err)
		}
		if err == nil && !bytes.Equal(b, []byte(data)) {
			t.Fatalf("read %q of %q", b, data)
		}
	})
}
