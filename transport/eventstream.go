package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// headKept is how much of an event over the limit is kept for its
// *jsonrpc.TooLargeError, to find the id of the message it carried.
const headKept = 64 << 10

// event is one server-sent event: its type ("message" when the stream
// names none) and its data, the lines of its data fields joined by LF.
type event struct {
	typ  string
	data []byte
}

// eventReader reads the events of an SSE stream (the WHATWG HTML
// "event stream" format), the one reader of every HTTP upstream's stream:
// a Streamable HTTP answer, its GET stream, a legacy SSE stream. Lines end
// in LF or CRLF; comments are skipped; id and retry fields are kept as the
// standard keeps them, for a stream that ends early to be resumed from
// (see resume.go). Each event is bounded by limit bytes of lines, not the stream:
// a stream may run for days, its events may not grow without end. The
// data is handed on as the server wrote it; Decode's rules apply where
// the message is read (the Conn).
type eventReader struct {
	br    *bufio.Reader
	limit int

	// lastID is the stream's last event ID: the id field in force when
	// the last event ended, an event of no data (a priming event) too;
	// "" when the server gave none. idBuf is the id field in force now.
	lastID, idBuf string
	// retry is the reconnection time the server last asked for with a
	// retry field; 0 when it asked for none.
	retry time.Duration
}

func newEventReader(r io.Reader, limit int) *eventReader {
	return &eventReader{br: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// next returns the next event. An event over the limit is a
// *jsonrpc.TooLargeError, with its first bytes, returned as soon as it
// goes over (the rest is not read: a stream whose event has no end must
// not be read to its end); the stream cannot be read further. io.EOF is
// the end of the stream; an event it cuts off is dropped.
func (r *eventReader) next() (event, error) {
	var ev event
	hasData := false
	size := 0
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		blank := line == nil && (string(chunk) == "\n" || string(chunk) == "\r\n")
		if !blank {
			size += len(chunk) // the blank line that ends an event is not part of it
		}
		if size > r.limit {
			head := append(line, chunk...)
			if hasData {
				head = append(ev.data, head...)
			}
			return event{}, &jsonrpc.TooLargeError{Size: size, Limit: r.limit, Head: bytes.Clone(head[:min(len(head), headKept)])}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, chunk...) // a long line: gather it whole, within the limit
			continue
		}
		if line != nil {
			chunk = append(line, chunk...)
			line = nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return event{}, io.EOF
			}
			return event{}, err
		}
		chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		if len(chunk) == 0 {
			r.lastID = r.idBuf // at each event's end, dispatched or not (WHATWG HTML, 9.2.6)
			if hasData {
				if ev.typ == "" {
					ev.typ = "message"
				}
				return ev, nil
			}
			ev, size = event{}, 0 // an event of no data is not dispatched
			continue
		}
		field, value, _ := bytes.Cut(chunk, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data, hasData = append(ev.data, value...), true
		case "event":
			ev.typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.idBuf = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
