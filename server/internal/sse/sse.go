// Package sse writes server-sent events (the HTML standard's
// text/event-stream) on an HTTP response: the one writer of the HTTP
// face's event streams (server/mcphttp) and of the inspector's page
// (server/inspect). Events are buffered and written together, each write
// within a deadline, so that a client that stops reading loses its
// stream instead of holding a goroutine.
package sse

import (
	"net/http"
	"time"
)

// Writer buffers events and writes them on a response, each write within
// its timeout. The caller sends the headers.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// NewWriter is a Writer on w whose writes each have timeout.
func NewWriter(w http.ResponseWriter, timeout time.Duration) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// Event buffers one event: its id ("" for none: no id line), its name
// ("" for none: a message) and its data, which must be one line (JSON
// as encoding/json writes it is).
func (sw *Writer) Event(id, name string, data []byte) {
	if id != "" {
		sw.buf = append(sw.buf, "id: "...)
		sw.buf = append(sw.buf, id...)
		sw.buf = append(sw.buf, '\n')
	}
	if name != "" {
		sw.buf = append(sw.buf, "event: "...)
		sw.buf = append(sw.buf, name...)
		sw.buf = append(sw.buf, '\n')
	}
	sw.buf = append(sw.buf, "data: "...)
	sw.buf = append(sw.buf, data...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// Comment buffers a comment, which a client ignores (a keep-alive, so
// that proxies keep an idle stream open).
func (sw *Writer) Comment(text string) {
	sw.buf = append(sw.buf, ": "...)
	sw.buf = append(sw.buf, text...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// Len is how many bytes are buffered.
func (sw *Writer) Len() int { return len(sw.buf) }

// Flush writes what is buffered, within the timeout, and flushes the
// response (with nothing buffered, its headers).
func (sw *Writer) Flush() error {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	b := sw.buf
	sw.buf = sw.buf[:0]
	if len(b) > 0 {
		if _, err := sw.w.Write(b); err != nil {
			return err
		}
	}
	return sw.rc.Flush()
}
