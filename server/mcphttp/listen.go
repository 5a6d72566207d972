package mcphttp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// methodListen is 2026-07-28's request for the notifications a client
// opts in to (SEP-2575).
const methodListen = "subscriptions/listen"

// listen answers subscriptions/listen on its POST: the response is an
// event stream carrying the hub's acknowledgement, then each notification
// of the listen, with keep-alive comments between, and the listen's
// result when the hub ends it. Its headers go out as soon as the hub has
// taken the listen (server.Peer's Listening), before its acknowledgement:
// that comes once the hub has subscribed to what the listen names, which
// may wait for an upstream's start or answer, and a client may wait for
// the headers to go on (go-sdk's Subscribe does, whatever its context).
// A listen the hub refuses (its params wrong, too many listens) is
// answered as any request is: plain JSON, with the HTTP status status
// gives its error (400 for -32602 in 2026-07-28, as for every other
// request). It ends
// when the client closes it, the session ends or the server stops; a
// client that stops reading is cut off by the write deadline, and the
// hub's side of the listen is cancelled with it. Its POST counts against
// the requests in flight, as any request's does, until it ends.
func (s *Server) listen(w http.ResponseWriter, r *http.Request, hs *httpSession, msg *jsonrpc.Message, header http.Header, status func([]byte) int, release func()) {
	if !acceptsSSE(r) {
		release()
		writeJSON(w, http.StatusNotAcceptable, header, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Not Acceptable: subscriptions/listen answers with text/event-stream")))
		return
	}
	p, ok := s.inflight.expect(w, hs, msg, header, release, http.StatusOK, listenOwnStream)
	if !ok {
		return
	}
	taken := p.taken // the hub signals it (Listening) once it takes the listen
	delivered, answered := false, false
	defer func() {
		if delivered && !answered {
			hs.cancelListen(msg.ID)
		}
		hs.st.forget(msg.ID, p, delivered)
		hs.touch()
	}()
	delivered = hs.st.deliverDecoded(r.Context(), msg) // its Conn takes the face's decoding
	release()
	if !delivered {
		writeJSONError(w, http.StatusNotFound, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Session not found"))
		return
	}
	sw := newSSEWriter(w, s.opts.writeTimeout)
	started := false
	start := func() bool { // false: the client is gone
		if started {
			return true
		}
		started = true
		return sw.start(header) == nil
	}
	defer func() { _ = start() }() // a listen the hub ends before its first message: an empty stream, as before
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-taken:
			taken = nil
			if !start() {
				return
			}
		case resp := <-p.answer:
			answered = true
			batch := p.out.out().TakeNow()
			if !started && len(batch) == 0 && resp != nil { // refused: nothing streamed yet
				started = true
				writeJSON(w, status(resp), header, resp)
				return
			}
			if resp != nil {
				batch = append(batch, resp)
			}
			if start() {
				_ = sw.events("message", batch, false)
			}
			return
		case <-p.out.out().Ready():
			if batch := p.out.out().TakeNow(); len(batch) > 0 && (!start() || sw.events("message", batch, false) != nil) {
				return // the client stopped reading
			}
		case <-t.C:
			if !start() || sw.ping() != nil {
				return
			}
		case <-r.Context().Done():
			started = true // nobody to write to
			return
		case <-hs.st.Done():
			return
		case <-s.stop:
			return
		case <-s.draining.done(): // the client listens again, at another replica
			return
		}
	}
}

// cancelListen cancels the hub's side of a listen whose stream ended
// before the hub answered it, as the client's notifications/cancelled
// would: a session that goes on keeps no listen nobody hears.
func (hs *httpSession) cancelListen(id []byte) {
	params := append(append([]byte(`{"requestId":`), id...), '}') // id: the request's own bytes, checked by Decode
	ctx, cancel := context.WithTimeout(hs.ctx, writeTimeout)
	defer cancel()
	hs.st.deliver(ctx, jsonrpc.EncodeNotification("notifications/cancelled", params))
}

// listenCount counts the listens open for each credential. Over HTTP a
// listen is a request with a session of its own for as long as it is open
// (2026-07-28 has no sessions), so listens would otherwise hold sessions
// without end.
type listenCount struct {
	mu sync.Mutex
	n  map[string]int
}

// maxListens is how many listens one credential may hold open: a quarter
// of max_sessions, so that one client's listens leave the rest to
// requests and to other clients.
func maxListens(maxSessions int) int { return max(1, maxSessions/4) }

// take counts a listen of cred, unless it holds limit already.
func (c *listenCount) take(cred string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if c.n[cred] >= limit {
		return false
	}
	c.n[cred]++
	return true
}

// give gives back a listen of cred that took.
func (c *listenCount) give(cred string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[cred]--; c.n[cred] <= 0 {
		delete(c.n, cred)
	}
}
