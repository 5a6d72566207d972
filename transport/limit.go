package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// ErrTooLarge is matched (errors.Is) by the error of a read from a remote
// upstream that went over settings.max_message_size.
var ErrTooLarge = errors.New("over the size limit")

// tooLargeError says what went over the limit: a whole body, or one event
// of an event stream, of a response with status.
type tooLargeError struct {
	limit  int
	event  bool
	status int
}

func (e *tooLargeError) Error() string {
	what := "response"
	if e.event {
		what = "SSE event"
	}
	if e.status/100 != 2 {
		what += fmt.Sprintf(" (HTTP %d)", e.status)
	}
	return fmt.Sprintf("upstream %s over the %d byte limit (settings.max_message_size)", what, e.limit)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// overLimitKey is the context key of where a response body of the request
// records that it went over the limit: mcp-go logs why an SSE response
// broke off and answers the call with an error of its own, which says
// nothing of it.
type overLimitKey struct{}

// withOverLimit returns ctx carrying a slot for the error of a body of its
// requests that goes over the limit.
func withOverLimit(ctx context.Context) (context.Context, *atomic.Pointer[tooLargeError]) {
	slot := new(atomic.Pointer[tooLargeError])
	return context.WithValue(ctx, overLimitKey{}, slot), slot
}

// newHTTPClient is the HTTP client of one remote upstream: what mcp-go uses
// when given none (http.DefaultTransport, no timeout of its own, which a
// stream must not have), with every response body bounded by limit.
func newHTTPClient(limit int) *http.Client {
	return &http.Client{Transport: &limitTransport{base: http.DefaultTransport, limit: limit}}
}

// limitTransport bounds what a remote upstream can make the hub hold.
// mcp-go decodes a JSON body whole and reads an SSE line whole, so without
// it a server that sends an endless body, or a line with no end, grows the
// hub until it dies, even with no call in flight (the GET stream). A body
// is cut off at limit bytes in all, an event stream at limit bytes in one
// event, which is what mcp-go gathers before it hands an event on: a
// stream may run for days, its events may not grow without end. The read
// then fails with a *tooLargeError, which ends the request or the stream.
// Bodies are counted after the transport has decompressed them.
type limitTransport struct {
	base  http.RoundTripper
	limit int
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	slot, _ := req.Context().Value(overLimitKey{}).(*atomic.Pointer[tooLargeError])
	over := func(event bool) error {
		err := &tooLargeError{limit: t.limit, event: event, status: resp.StatusCode}
		if slot != nil {
			slot.Store(err)
		}
		return err
	}
	if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType == "text/event-stream" {
		resp.Body = &eventLimitBody{body: resp.Body, limit: t.limit, over: over, blank: true}
	} else {
		resp.Body = &bodyLimitBody{body: resp.Body, over: over, left: t.limit}
	}
	return resp, nil
}

// bodyLimitBody fails a body longer than limit bytes.
type bodyLimitBody struct {
	body io.ReadCloser
	over func(event bool) error // the error once over the limit
	left int                    // bytes the body may still have
	err  error
}

func (b *bodyLimitBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.left == 0 {
		// The body is at the limit: one byte more is over it, its end
		// is not.
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			b.err = b.over(false)
			return 0, b.err
		}
		return 0, err
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= n
	return n, err
}

func (b *bodyLimitBody) Close() error { return b.body.Close() }

// eventLimitBody fails an event stream with an event longer than limit
// bytes. Events are told apart as mcp-go reads them, which is what it
// holds: a line ends with LF, and a line of nothing but CRs is empty and
// ends the event. (The SSE standard also ends a line with a lone CR, which
// mcp-go does not: a stream of them is one line to it, so here too.)
type eventLimitBody struct {
	body  io.ReadCloser
	limit int
	over  func(event bool) error // the error once over the limit
	n     int                    // bytes of the event being read
	blank bool                   // the line being read has had nothing but CRs
	err   error
}

func (b *eventLimitBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.body.Read(p)
	for i := 0; i < n; {
		// The line up to the next LF, or the rest of p.
		run := bytes.IndexByte(p[i:n], '\n')
		if run < 0 {
			run = n - i
		}
		if len(bytes.TrimLeft(p[i:i+run], "\r")) > 0 {
			b.blank = false
		}
		if b.n+run > b.limit {
			b.err = b.over(true)
			return i + b.limit - b.n, b.err
		}
		b.n += run
		i += run
		if i == n {
			break
		}
		// p[i] is an LF.
		if b.blank {
			b.n = 0 // an empty line: the event is over
		} else if b.n++; b.n > b.limit {
			b.err = b.over(true)
			return i, b.err
		}
		b.blank = true
		i++
	}
	return n, err
}

func (b *eventLimitBody) Close() error { return b.body.Close() }
