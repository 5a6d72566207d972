package mcphttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// bodyReader reads the bodies of the messages POSTed: each within the
// budget of bodies being read and decoded (byteBudget, limits.go), the
// body timeout and the hub's largest message.
type bodyReader struct {
	*byteBudget
	timeout time.Duration // Options.BodyTimeout
	hub     server.Host   // its Settings' MaxMessageSize
}

// readMessage reads and decodes one message, answering the client itself
// when the body is over the size limit, not read within the body timeout,
// or not a valid message. The body's bytes are reserved from the budget
// of bodies first (waiting up to the body timeout for room); release gives
// them back once the session's Conn has taken the message (or it is
// refused), and must be called when ok.
// body is the message's bytes, for the session's Conn.
func (b *bodyReader) readMessage(w http.ResponseWriter, r *http.Request) (msg *jsonrpc.Message, body []byte, release func(), ok bool) {
	limit := b.hub.Settings().MaxMessageSize
	if r.ContentLength > int64(limit) {
		// Not read: only its start, for the id of the refusal, within
		// the body timeout (a client that sends nothing held it without
		// end); then the connection closes (the rest is never read).
		httpguard.CloseUnread(w, r)
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(b.timeout))
		prefix, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		writeJSONError(w, http.StatusRequestEntityTooLarge, jsonrpc.IDOf(prefix), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("message is over the %d byte limit", limit)))
		return nil, nil, nil, false
	}
	want := int64(limit) + 1 // unknown length: room for the largest
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	client := httpguard.CredentialOf(r.Context())
	held, err := b.acquire(r.Context(), b.timeout, want, client)
	if err != nil {
		httpguard.CloseUnread(w, r) // refused unread: at once, whatever its length
		unavailable(w, "too many request bodies being read")
		return nil, nil, nil, false
	}
	release = (&heldBytes{budget: b.byteBudget, n: held, client: client}).release
	body, err = b.readBody(w, r, limit)
	if err != nil {
		release()
		status := http.StatusBadRequest
		if errors.Is(err, os.ErrDeadlineExceeded) {
			status = http.StatusRequestTimeout
			w.Header().Set("Connection", "close")
		}
		// The part read may hold the id, as an over-large body's start
		// does: the client can then tell which request was cut.
		writeJSONError(w, status, jsonrpc.IDOf(body), jsonrpc.Errorf(jsonrpc.CodeParseError, "read body: "+err.Error()))
		return nil, nil, nil, false
	}
	if len(body) > limit {
		release()
		writeJSONError(w, http.StatusRequestEntityTooLarge, jsonrpc.IDOf(body), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("message is over the %d byte limit", limit)))
		return nil, nil, nil, false
	}
	msg, err = jsonrpc.Decode(body)
	if err != nil {
		release()
		var de *jsonrpc.DecodeError
		var id json.RawMessage
		if errors.As(err, &de) {
			id = de.ID
		}
		writeJSONError(w, http.StatusBadRequest, id, jsonrpc.ToError(err))
		return nil, nil, nil, false
	}
	return msg, body, release, true
}

// heldBytes are a body's bytes reserved from the budget of bodies, given
// back by the first call of release.
type heldBytes struct {
	budget *byteBudget
	n      int64
	client string // whose share they count against
	given  atomic.Bool
}

func (h *heldBytes) release() {
	if h.given.CompareAndSwap(false, true) {
		h.budget.release(h.n, h.client)
	}
}

// readBody reads r's body, up to limit+1 bytes, within the body timeout:
// a client that trickles its body is cut off. The deadline is lifted
// afterwards, so that a response stream is not cut by it. A body of known
// length is read into a buffer of that size, without the doubling of
// io.ReadAll. A body read to its end is closed: net/http then has
// nothing left to drain before the response (it copied the rest of an
// open body to io.Discard, an allocation, a pooled buffer and one more
// read each request, finding nothing). One read short of its end (over
// the limit) is left open, for net/http to drain or to close the
// connection over, as before. On an error, the bytes are those read
// before it.
func (b *bodyReader) readBody(w http.ResponseWriter, r *http.Request, limit int) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(b.timeout))
	defer rc.SetReadDeadline(time.Time{})
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		var n int
		n, err = io.ReadFull(r.Body, body)
		body = body[:n]
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	}
	if err == nil && len(body) <= limit {
		_ = r.Body.Close()
	}
	return body, err
}
