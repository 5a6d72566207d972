package mcphttp

import (
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// streamKind is what a POST's answer goes down: its own stream or not,
// and whether it is a listen's (whose stream opens on the hub's signal).
type streamKind int

const (
	noStream streamKind = iota
	ownStream
	listenOwnStream
)

// expect takes on a client request of hs at the HTTP layer, before its
// session's Conn sees it: it is counted against the face's cap of
// requests in flight in all (over it w is answered 503), and registered
// with the session's stream so that its answer finds its way back (a
// stream kind other than noStream: down a stream of its POST's own; a
// listen's post also has its taken channel, made before another goroutine
// can find the post). A request whose id is still
// unanswered in the session is answered on w with dupStatus: its answer
// could not be told from the other's. Admission in the session (its cap,
// cancellation, answer-once) is the Conn's. release gives the body's
// bytes back: the caller calls it once the session's Conn has the
// message; it runs at once when the request is refused here. ok is false
// when w has been answered.
func (c *inflight) expect(w http.ResponseWriter, hs *httpSession, msg *jsonrpc.Message, header http.Header, release func(),
	dupStatus int, kind streamKind) (*post, bool) {
	if !c.begin(hs.client) {
		release()
		unavailable(w, "too many requests in flight")
		return nil, false
	}
	p := &post{answer: make(chan []byte, 1), inflight: c, client: hs.client, body: release}
	if kind != noStream {
		p.out = &p.stream // its outbox made when first needed
	}
	if kind == listenOwnStream {
		p.taken = make(chan struct{}, 1)
	}
	if !hs.st.expect(msg.ID, p) {
		p.release()
		writeJSON(w, dupStatus, header, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid Request: id "+clip.Echo(string(msg.ID))+" is already in use by a request in flight")))
		return nil, false
	}
	return p, true
}
