package inspect

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"
)

// maxExports bounds the exports being written at once. Each holds a
// snapshot of the history (up to Options.MaxBytes of bodies) until it is
// written, which the history, once it has moved on, no longer counts: a
// client that never reads its exports could otherwise pin history after
// history.
const maxExports = 2

// serveExport writes the history as JSON Lines, one row a line, oldest
// first: for jq, or to attach to a bug report. Each write has a deadline
// (a client that stops reading loses its export), and beyond maxExports
// at once an export is refused 503.
func (i *Inspector) serveExport(w http.ResponseWriter, _ *http.Request) {
	select {
	case i.exports <- struct{}{}:
		defer func() { <-i.exports }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Service Unavailable: too many exports at once", http.StatusServiceUnavailable)
		return
	}
	rows := i.rows()
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Content-Disposition", `attachment; filename="dynamic-mcp-traffic-`+time.Now().UTC().Format("20060102-150405")+`.jsonl"`)
	w.Header().Set("Cache-Control", "no-store")
	bw := bufio.NewWriterSize(deadlineWriter{w: w, rc: http.NewResponseController(w), timeout: i.writeTimeout}, 64<<10)
	enc := json.NewEncoder(bw) // one line each: Encode ends each with a newline
	for _, r := range rows {
		if enc.Encode(r) != nil {
			return
		}
	}
	_ = bw.Flush()
}

// deadlineWriter gives each write to a response its own deadline.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.w.Write(p)
}
