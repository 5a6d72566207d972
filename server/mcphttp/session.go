package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// httpSession is a client session over HTTP: the hub's session, the hub's
// requests to the client waiting for answers, the client's requests in
// flight, and the streams the hub's messages can go down. It is the
// session's server.Peer.
type httpSession struct {
	id        string
	transport string          // streamable-http or sse
	sess      *server.Session // the hub's side; set once Open returns
	ctx       context.Context // the session's life: cancelled when it ends
	cancel    context.CancelFunc
	calls     *jsonrpc.Calls    // the hub's requests to the client
	inflight  *jsonrpc.Inflight // the client's requests
	lost      atomic.Uint64     // notifications dropped or with no stream

	mu         sync.Mutex // guards the fields below
	streams    []*stream  // open POST response streams, oldest first
	standalone *stream    // the GET stream, or the legacy SSE stream
	lastSeen   time.Time
	ended      bool
}

// newSession creates a session, opens it with the hub and registers it.
func (s *Server) newSession(transport string) (*httpSession, error) {
	if err := s.reserveSession(); err != nil {
		return nil, err
	}
	hs := &httpSession{
		id:        newSessionID(),
		transport: transport,
		calls:     jsonrpc.NewCalls(),
		inflight:  jsonrpc.NewInflight(s.hub.Settings().SessionInflight),
		lastSeen:  time.Now(),
	}
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	sess, err := s.hub.Open(hs.id, transport, hs)
	s.mu.Lock()
	s.pending--
	if err == nil && s.closed {
		err = errClosed
	}
	if err != nil {
		s.mu.Unlock()
		hs.cancel()
		if sess != nil {
			sess.Close()
		}
		return nil, err
	}
	hs.sess = sess
	s.sessions[hs.id] = hs
	s.mu.Unlock()
	return hs, nil
}

// streamKey is the context key of the POST stream a request's messages
// to the client go down.
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

// Notify sends the client a notification (server.Peer).
func (hs *httpSession) Notify(ctx context.Context, msg []byte) { _ = hs.deliver(ctx, msg, false) }

// Call sends the client a request and waits for its answer (server.Peer).
func (hs *httpSession) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id, ch, err := hs.calls.Start()
	if err != nil {
		return nil, server.ErrClientGone
	}
	if err := hs.deliver(ctx, jsonrpc.EncodeRequest(id, method, params), true); err != nil {
		hs.calls.Forget(id)
		return nil, fmt.Errorf("cannot send %s to the client: %w", method, err)
	}
	res, err := hs.calls.Wait(ctx, id, ch)
	if err != nil && hs.calls.Err() != nil && ctx.Err() == nil {
		return nil, server.ErrClientGone
	}
	return res, err
}

// Dropped is how many notifications were lost for the client (server.Peer).
func (hs *httpSession) Dropped() uint64 { return hs.lost.Load() }

// Answering is how many of the client's requests are in flight (server.Peer).
func (hs *httpSession) Answering() int { return hs.inflight.Len() }

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

// idleSince reports whether the session has no request in flight and no
// open stream, and was last used before t.
func (hs *httpSession) idleSince(t time.Time) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.streams) == 0 && hs.standalone == nil && hs.inflight.Len() == 0 && hs.lastSeen.Before(t)
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

// claimStandalone makes st the session's GET stream, unless one is open:
// the spec allows one, and the first stays the client's (a second GET
// with the same session id is answered 409 Conflict).
func (hs *httpSession) claimStandalone(st *stream) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.standalone != nil || hs.ended {
		return false
	}
	hs.standalone = st
	return true
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
// cancelled, the hub's requests to it fail, and the hub forgets it.
func (hs *httpSession) end() {
	hs.mu.Lock()
	if hs.ended {
		hs.mu.Unlock()
		return
	}
	hs.ended = true
	hs.mu.Unlock()
	hs.cancel()
	hs.inflight.CancelAll()
	hs.calls.Close(server.ErrClientGone)
	hs.sess.Close()
}

// stream is one place the hub's messages to a client can go: a POST's
// response, or a GET stream. Senders put messages in its bounded outbox;
// only the HTTP handler that owns the response writes them, each write
// with a deadline.
type stream struct {
	out *jsonrpc.Outbox
}

func newStream() *stream { return &stream{out: jsonrpc.NewOutbox(0)} }
