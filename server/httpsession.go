package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// httpSession is a client session over HTTP: the hub's requests to it
// waiting for answers, its requests in flight, and the streams the hub's
// messages can go down.
type httpSession struct {
	*session
	ctx      context.Context // the session's life: cancelled when it ends
	cancel   context.CancelFunc
	calls    *jsonrpc.Calls    // the hub's requests to the client
	inflight *jsonrpc.Inflight // the client's requests
	lost     atomic.Uint64     // notifications dropped or with no stream

	mu         sync.Mutex // guards the fields below
	streams    []*stream  // open POST response streams, oldest first
	standalone *stream    // the GET stream, or the legacy SSE stream
	lastSeen   time.Time
	ended      bool
}

// newHTTPSession creates and registers a session.
func (s *HTTPServer) newHTTPSession(transport string) (*httpSession, error) {
	if err := s.reserveSession(); err != nil {
		return nil, err
	}
	hs := &httpSession{
		session:  newSession(newSessionID(), transport),
		calls:    jsonrpc.NewCalls(),
		inflight: jsonrpc.NewInflight(s.hub.config().Settings.SessionInflight),
		lastSeen: time.Now(),
	}
	hs.peer = hs
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	if err := s.hub.addSession(hs.ctx, hs.session); err != nil {
		hs.cancel()
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	s.sessions[hs.id] = hs
	s.pending--
	s.mu.Unlock()
	return hs, nil
}

type streamKey struct{}

// deliver sends a message the hub initiated: down the stream of the
// request it belongs to while that is open, else the GET stream. A request
// of the hub's (must) may also take the most recent open request stream,
// as the client is listening there; a notification goes nowhere it does
// not belong (the spec asks that a POST's stream carry what relates to its
// request). A notification a stream has no room for is dropped; a request
// fails when no stream is open.
func (hs *httpSession) deliver(ctx context.Context, msg []byte, must bool) error {
	var candidates []*stream
	if st, ok := ctx.Value(streamKey{}).(*stream); ok {
		candidates = append(candidates, st)
	}
	hs.mu.Lock()
	if hs.standalone != nil {
		candidates = append(candidates, hs.standalone)
	}
	for i := len(hs.streams) - 1; must && i >= 0; i-- {
		candidates = append(candidates, hs.streams[i])
	}
	hs.mu.Unlock()
	for _, st := range candidates {
		var err error
		if must {
			err = st.out.Send(msg)
		} else {
			err = st.out.Notify(msg)
		}
		switch err {
		case nil:
			return nil
		case jsonrpc.ErrDropped:
			hs.lost.Add(1)
			return err
		}
	}
	if !must {
		hs.lost.Add(1)
	}
	return fmt.Errorf("no stream open to the client (open GET %s or call with Accept: text/event-stream)", "/mcp")
}

func (hs *httpSession) notify(ctx context.Context, msg []byte) { _ = hs.deliver(ctx, msg, false) }

func (hs *httpSession) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id, ch, err := hs.calls.Start()
	if err != nil {
		return nil, errClientGone
	}
	if err := hs.deliver(ctx, jsonrpc.EncodeRequest(id, method, params), true); err != nil {
		hs.calls.Forget(id)
		return nil, fmt.Errorf("cannot send %s to the client: %w", method, err)
	}
	res, err := hs.calls.Wait(ctx, id, ch)
	if err != nil && hs.calls.Err() != nil && ctx.Err() == nil {
		return nil, errClientGone
	}
	return res, err
}

func (hs *httpSession) dropped() uint64 { return hs.lost.Load() }

func (hs *httpSession) answering() int { return hs.inflight.Len() }

// answersBacklogged reports whether the session's standalone stream holds
// as many unread answers as a session may have requests in flight.
func (hs *httpSession) answersBacklogged() bool {
	hs.mu.Lock()
	st := hs.standalone
	hs.mu.Unlock()
	return st != nil && st.out.Full(hs.inflight.Max())
}

func (hs *httpSession) touch() {
	hs.mu.Lock()
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

func (hs *httpSession) addStream(st *stream) {
	hs.mu.Lock()
	hs.streams = append(hs.streams, st)
	hs.mu.Unlock()
}

func (hs *httpSession) removeStream(st *stream) {
	st.out.Close()
	hs.mu.Lock()
	for i, x := range hs.streams {
		if x == st {
			hs.streams = append(hs.streams[:i], hs.streams[i+1:]...)
			break
		}
	}
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// setStandalone makes st the session's GET stream, ending the one before.
func (hs *httpSession) setStandalone(st *stream) {
	hs.mu.Lock()
	if old := hs.standalone; old != nil {
		old.out.Close()
	}
	hs.standalone = st
	hs.mu.Unlock()
}

func (hs *httpSession) clearStandalone(st *stream) {
	st.out.Close()
	hs.mu.Lock()
	if hs.standalone == st {
		hs.standalone = nil
	}
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// end closes the session for good: the client's requests in flight are
// cancelled and the hub's requests to it fail.
func (hs *httpSession) end(h *Hub) {
	hs.mu.Lock()
	if hs.ended {
		hs.mu.Unlock()
		return
	}
	hs.ended = true
	hs.mu.Unlock()
	hs.cancel()
	hs.inflight.CancelAll()
	hs.calls.Close(errClientGone)
	h.removeSession(context.Background(), hs.session)
}

// stream is one place the hub's messages to a client can go: a POST's
// response, or a GET stream. Senders put messages in its bounded outbox;
// only the HTTP handler that owns the response writes them, each write
// with a deadline.
type stream struct {
	out *jsonrpc.Outbox
}

func newStream() *stream { return &stream{out: jsonrpc.NewOutbox(0)} }

// sseWriter writes SSE events on a response, each with a write deadline.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	buf     []byte
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// start sends the headers of an event stream.
func (sw *sseWriter) start(extra http.Header) error {
	for k, v := range extra {
		sw.w.Header()[k] = v
	}
	sw.w.Header().Set("Content-Type", "text/event-stream")
	sw.w.Header().Set("Cache-Control", "no-cache")
	sw.w.Header().Set("Connection", "keep-alive")
	sw.w.WriteHeader(http.StatusOK)
	sw.started = true
	return sw.flush(nil)
}

// events writes messages as one "message" event each.
func (sw *sseWriter) events(name string, msgs [][]byte) error {
	sw.buf = sw.buf[:0]
	for _, m := range msgs {
		sw.buf = append(sw.buf, "event: "...)
		sw.buf = append(sw.buf, name...)
		sw.buf = append(sw.buf, "\ndata: "...)
		sw.buf = append(sw.buf, m...)
		sw.buf = append(sw.buf, "\n\n"...)
	}
	return sw.flush(sw.buf)
}

func (sw *sseWriter) ping() error { return sw.flush([]byte(": keep-alive\n\n")) }

func (sw *sseWriter) flush(b []byte) error {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	if len(b) > 0 {
		if _, err := sw.w.Write(b); err != nil {
			return err
		}
	}
	return sw.rc.Flush()
}

// pump writes st's messages as events until the client goes, the session
// ends, the server stops or st is replaced, with keep-alive comments.
func (s *HTTPServer) pump(r *http.Request, hs *httpSession, st *stream, sw *sseWriter) {
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-st.out.Ready():
			if batch := st.out.TakeNow(); len(batch) > 0 {
				if sw.events("message", batch) != nil {
					return
				}
			}
			if st.out.Closed() {
				return
			}
			continue
		case <-t.C:
			if sw.ping() == nil {
				continue
			}
		case <-r.Context().Done():
		case <-hs.ctx.Done():
		case <-s.stop:
		}
		return
	}
}

// writeJSON writes a whole JSON answer, within the write deadline.
func writeJSON(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSONError(w http.ResponseWriter, status int, id []byte, err *rpcError) {
	writeJSON(w, status, nil, jsonrpc.EncodeError(id, err))
}
