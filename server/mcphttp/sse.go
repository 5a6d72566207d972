package mcphttp

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/sse"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// sseWriter writes the face's SSE events on a response (sse.Writer),
// each write within the face's write timeout (Options.writeTimeout).
type sseWriter struct {
	w   http.ResponseWriter
	out *sse.Writer
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, out: sse.NewWriter(w, timeout)}
}

// start sends the headers of an event stream.
func (sw *sseWriter) start(extra http.Header) error {
	for k, v := range extra {
		sw.w.Header()[k] = v
	}
	sw.w.Header().Set("Content-Type", "text/event-stream")
	sw.w.Header().Set("Cache-Control", "no-cache")
	if sw.w.Header().Get("Connection") != "close" { // closed after: a body left unread (httpguard.CloseUnread)
		sw.w.Header().Set("Connection", "keep-alive")
	}
	// A proxy that buffers responses (nginx) passes each event on at once
	// (2026-07-28, basic/transports/streamable-http: SHOULD).
	sw.w.Header().Set("X-Accel-Buffering", "no")
	sw.w.WriteHeader(http.StatusOK)
	return sw.out.Flush()
}

// events writes messages as one event of name each; withIDs, each is
// framed "<id>\n<msg>" (eventlog.go) and its event carries that id. It is
// the one writer of events, for every stream of the face: a POST's, the
// GET stream (withIDs), a listen's and legacy SSE's.
func (sw *sseWriter) events(name string, msgs [][]byte, withIDs bool) error {
	for _, m := range msgs {
		var id []byte
		if withIDs {
			id, m, _ = bytes.Cut(m, []byte{'\n'})
		}
		sw.out.Event(string(id), name, m)
	}
	return sw.out.Flush()
}

// prime writes an event with id and no message, so that a client cut off
// before the next event resumes from here (MCP 2025-11-25,
// basic/transports: the priming event).
func (sw *sseWriter) prime(id string) error {
	sw.out.Event(id, "", nil)
	return sw.out.Flush()
}

func (sw *sseWriter) ping() error {
	sw.out.Comment("keep-alive")
	return sw.out.Flush()
}

// pump writes st's messages as events until the client goes, the session
// ends, the server stops (stop is closed) or st is replaced, with
// keep-alive comments; or, a GET stream, the server drains (drain.stream).
func (sw *sseWriter) pump(r *http.Request, hs *httpSession, st *stream, stop <-chan struct{}, draining *drain) {
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-st.out().Ready():
			if batch := st.out().TakeNow(); len(batch) > 0 {
				if sw.events("message", batch, st.ids) != nil {
					return
				}
			}
			if st.out().Closed() {
				return
			}
			continue
		case <-t.C:
			if sw.ping() == nil {
				continue
			}
		case <-r.Context().Done():
		case <-hs.ctx.Done():
		case <-stop:
		case <-draining.stream(hs):
		}
		return
	}
}

// jsonContentType is the Content-Type of a JSON answer, as net/http's
// Header.Set would make it, made once: nothing changes a header's values
// in place.
var jsonContentType = []string{"application/json"}

// writeJSON writes a whole JSON answer, within the write deadline.
func writeJSON(w http.ResponseWriter, status int, header http.Header, body []byte) {
	h := w.Header()
	for k, v := range header {
		h[k] = v
	}
	h["Content-Type"] = jsonContentType
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSONError(w http.ResponseWriter, status int, id []byte, err *jsonrpc.Error) {
	writeJSON(w, status, nil, jsonrpc.EncodeError(id, err))
}
