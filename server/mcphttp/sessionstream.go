package mcphttp

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/server/panics"
	"github.com/dynamic-mcp/dynamic-mcp/server/relay"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// sessionStream is the jsonrpc.Stream of one HTTP session, the one its
// Conn runs on: Read returns the messages the client POSTs, and Write
// routes each message the Conn writes by its jsonrpc.Relation. Over
// Streamable HTTP a request's answer, and what is sent while it is
// handled, go down the POST that brought it (MCP spec, basic/transports:
// a POST's stream carries what relates to its request); the rest goes
// down the GET stream, and a request of the hub's with nowhere else to go
// down the POST stream opened last. Over legacy SSE everything goes down
// the session's one SSE stream.
//
// Write never waits on the client: it queues on the HTTP stream's
// bounded outbox, which the HTTP handler owning that response writes.
type sessionStream struct {
	legacy bool
	in     chan inbound  // POSTed messages, to Read
	closed chan struct{} // closed by Close
	once   sync.Once
	lost   atomic.Uint64 // notifications dropped, or with no stream to go down (one kept for the GET stream is not lost)

	mu         sync.Mutex       // guards posts, order, standalone and log
	posts      map[string]*post // the client's requests not yet answered, by id
	order      []*post          // posts with a stream, oldest first
	standalone *stream          // the GET stream, or the legacy SSE stream
	log        eventLog         // the GET stream's events, kept to resume (eventlog.go); not over legacy SSE
	relayed    *relay.Stream    // set before the session serves when the events go through the store instead (relayed.go)
}

// post is one client request not yet answered: its answer is handed to
// answer (nil: it ended unanswered) and release called once.
type post struct {
	out    *stream // its POST's stream (stream); nil over legacy SSE or a JSON-only POST
	stream stream  // out's, in the post: an allocation a request less
	answer chan []byte
	// taken, a listen's alone, is signalled when the hub has taken it
	// (listening); made with the post (inflight.expect), before the
	// session can find it, and never written after.
	taken chan struct{}

	// What release gives back, once: the request's place among those in
	// flight (inflight.begin, for client) and its body's bytes (body).
	inflight *inflight
	client   string
	body     func()
	released atomic.Bool

	// While its handler serves it (serveHere): whether it still does,
	// and how the goroutine that wake starts responds.
	state     atomic.Int32
	responded sync.WaitGroup
	respond   func()
	panics    *panics.Counter
}

// release ends the request's count in flight and gives its body's bytes
// back; only the first call does anything.
func (p *post) release() {
	if p.released.CompareAndSwap(false, true) {
		p.inflight.end(p.client)
		p.body()
	}
}

// stream is one place the hub's messages to a client can go: a POST's
// response, or a GET stream. Writes put messages in its bounded outbox;
// only the HTTP handler that owns the response writes them, each write
// with a deadline.
type stream struct {
	// box is the outbox (out), a POST's made when it is first needed:
	// most POSTs are answered with nothing sent down their stream before
	// the answer, and make none.
	box atomic.Pointer[jsonrpc.Outbox]
	ids bool // a GET stream: each message is framed with its event id (eventlog.go)
	// woken, when set, is woken after each message put: a POST whose
	// handler is busy answering its request (serveHere) starts a
	// goroutine to write it (post.wake).
	woken atomic.Pointer[post]
}

// inbound is a message POSTed, with its decoding where the face made one.
type inbound struct {
	raw []byte
	m   *jsonrpc.Message // nil: the Conn decodes raw
}

// newStream is a GET stream's, a listen's or legacy SSE's.
func newStream() *stream {
	st := &stream{}
	st.box.Store(jsonrpc.NewOutbox(0))
	return st
}

// out is st's outbox, made now if it has none yet.
func (st *stream) out() *jsonrpc.Outbox {
	if o := st.box.Load(); o != nil {
		return o
	}
	st.box.CompareAndSwap(nil, jsonrpc.NewOutbox(0))
	return st.box.Load()
}

// queued is how many messages wait in st, without making its outbox.
func (st *stream) queued() int {
	if o := st.box.Load(); o != nil {
		return o.Len()
	}
	return 0
}

// close refuses any further message; a POST's stream that never needed
// an outbox gets closedOutbox, which refuses them all.
func (st *stream) close() {
	if !st.box.CompareAndSwap(nil, closedOutbox) {
		st.box.Load().Close()
	}
}

// closedOutbox is the outbox of every POST stream closed before it needed
// one of its own: closed from the start, it refuses every message and
// holds none. Nothing waits on it: a POST's stream is closed once its
// handler is done with it (forget).
var closedOutbox = func() *jsonrpc.Outbox {
	o := jsonrpc.NewOutbox(0)
	o.Close()
	return o
}()

// put queues msg: a notification as Outbox.Notify (dropped when the
// client is behind), anything else as Outbox.Send (never dropped).
func (st *stream) put(msg []byte, note bool) error {
	if note {
		return st.out().Notify(msg)
	}
	return st.out().Send(msg)
}

func newSessionStream(legacy bool) *sessionStream {
	ss := &sessionStream{legacy: legacy, in: make(chan inbound), closed: make(chan struct{}), posts: map[string]*post{}}
	if !legacy {
		ss.log = newEventLog()
	}
	return ss
}

// Routes marks the stream a jsonrpc.Router.
func (ss *sessionStream) Routes() bool { return true }

// Read returns the next message POSTed; io.EOF once the stream is closed.
func (ss *sessionStream) Read() ([]byte, error) {
	raw, _, err := ss.ReadMessage()
	return raw, err
}

// ReadMessage is Read with the face's decoding of the message, when it
// was delivered decoded: the body is decoded once (jsonrpc.MessageReader).
func (ss *sessionStream) ReadMessage() ([]byte, *jsonrpc.Message, error) {
	select {
	case in := <-ss.in:
		return in.raw, in.m, nil
	case <-ss.closed:
		return nil, nil, io.EOF
	}
}

// Close ends Read and the session's streams.
func (ss *sessionStream) Close() error {
	ss.once.Do(func() { close(ss.closed) })
	return nil
}

// Done is closed when the stream is.
func (ss *sessionStream) Done() <-chan struct{} { return ss.closed }

// deliver hands msg, POSTed by the client, to the Conn; false when the
// session ended or ctx did first.
func (ss *sessionStream) deliver(ctx context.Context, msg []byte) bool {
	return ss.deliverInbound(ctx, inbound{raw: msg})
}

// deliverDecoded is deliver for a message the face decoded (with
// jsonrpc.Decode) from its body, m.Raw: the Conn takes it as it is.
func (ss *sessionStream) deliverDecoded(ctx context.Context, m *jsonrpc.Message) bool {
	return ss.deliverInbound(ctx, inbound{raw: m.Raw, m: m})
}

func (ss *sessionStream) deliverInbound(ctx context.Context, in inbound) bool {
	select {
	case ss.in <- in:
		return true
	case <-ss.closed:
	case <-ctx.Done():
	}
	return false
}

// expect registers the client's request id, POSTed with out as its stream
// (nil: none), before it is delivered; false when a request with that id
// is still unanswered (an HTTP session cannot route two answers by one
// id).
func (ss *sessionStream) expect(id []byte, p *post) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, dup := ss.posts[string(id)]; dup {
		return false
	}
	ss.posts[string(id)] = p
	if p.out != nil {
		ss.order = append(ss.order, p)
	}
	return true
}

// forget drops the request id's POST (answered, or its HTTP request gone):
// what relates to it goes to the GET stream from now on. A request the
// Conn has (delivered) and has not answered yet stays registered, without
// a stream, until the Conn answers it (Write) or the session ends
// (releaseAll): it still counts against the face's cap of requests in
// flight, so a client that drops its POSTs cannot run more than the cap.
func (ss *sessionStream) forget(id []byte, p *post, delivered bool) {
	ss.mu.Lock()
	pending := ss.posts[string(id)] == p
	if pending && !delivered {
		delete(ss.posts, string(id))
	}
	for i, x := range ss.order {
		if x == p {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
	out := p.out
	p.out = nil
	ss.mu.Unlock()
	if out != nil {
		out.close()
	}
	if !pending || !delivered {
		p.release()
	}
}

// forgetEvents forgets the kept events of a session that ended.
func (ss *sessionStream) forgetEvents() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.log.clear()
	ss.log.total = nil // a late write is not counted against other sessions
}

// releaseAll releases every request still registered, once the Conn has
// closed: none will be answered.
func (ss *sessionStream) releaseAll() {
	ss.mu.Lock()
	posts := ss.posts
	ss.posts, ss.order = map[string]*post{}, nil
	ss.mu.Unlock()
	for _, p := range posts {
		p.release()
	}
}

// Write routes msg by its Relation (see sessionStream). It never fails:
// a message with nowhere to go is dropped (and a notification counted),
// as the spec lets a server do when the client has no stream open.
func (ss *sessionStream) Write(ctx context.Context, msg []byte) error {
	rel := jsonrpc.RelationOf(ctx)
	ss.mu.Lock()
	p := ss.posts[string(rel.ID)]
	if rel.Answer && p != nil {
		delete(ss.posts, string(rel.ID))
	}
	to := ss.standalone
	switch {
	case ss.legacy:
	case p != nil && p.out != nil:
		to = p.out
	case rel.Answer:
		to = nil // an answer goes down its own POST or nowhere
	case to == nil && !rel.Notification && len(ss.order) > 0:
		to = ss.order[len(ss.order)-1].out // the client listens there
	}
	if l := ss.relayed; l != nil && !rel.Answer && msg != nil && to == ss.standalone {
		// Through the store, numbered there, to whichever replica holds
		// the GET stream (this one's included): server/relay. A request of
		// the hub's too, when no POST stream is open here: the client's
		// GET stream may be open at another replica.
		ss.mu.Unlock()
		if !l.Enqueue(msg, rel.Notification) && rel.Notification {
			ss.lost.Add(1)
		}
		return nil
	}
	if !ss.legacy && !rel.Answer && msg != nil && to == ss.standalone && (to != nil || rel.Notification) {
		// Down the GET stream, or kept for it while none is open: numbered
		// and kept for a client that resumes (eventlog.go), and queued
		// under mu, so that a GET that resumes gets each event once, in
		// order, either from the log or live.
		b := framed(ss.log.add(msg, rel.Notification), msg)
		var err error
		if to != nil {
			err = to.put(b, rel.Notification)
		}
		ss.mu.Unlock()
		if err != nil && rel.Notification {
			ss.lost.Add(1)
		}
		return nil
	}
	ss.mu.Unlock()
	if rel.Answer && p != nil {
		p.release()
		if !ss.legacy {
			p.answer <- msg // buffered, and the Conn answers once
			return nil
		}
	}
	switch {
	case msg == nil:
	case to == nil:
		if rel.Notification {
			ss.lost.Add(1)
		}
	case to.put(msg, rel.Notification) != nil && rel.Notification:
		ss.lost.Add(1)
	}
	if to != nil && msg != nil {
		if w := to.woken.Load(); w != nil {
			w.wake()
		}
	}
	return nil
}

// listening signals the listen whose request's id is id that the hub has
// taken it (post.taken).
func (ss *sessionStream) listening(id []byte) {
	ss.mu.Lock()
	p := ss.posts[string(id)]
	ss.mu.Unlock()
	if p == nil || p.taken == nil {
		return
	}
	select {
	case p.taken <- struct{}{}:
	default: // signalled already
	}
}

// reachable reports whether a request of the hub's sent in relation to
// the client's request id (nil: none) has a stream to go down.
func (ss *sessionStream) reachable(id []byte) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if p := ss.posts[string(id)]; p != nil && p.out != nil {
		return true
	}
	if ss.relayed != nil {
		return true // a GET stream at any replica takes it (server/relay)
	}
	return ss.standalone != nil || !ss.legacy && len(ss.order) > 0
}

// open is how many HTTP streams of the session are open.
func (ss *sessionStream) open() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := len(ss.order)
	if ss.standalone != nil {
		n++
	}
	return n
}

// claimStandalone makes st the session's GET stream, unless one is open
// or the session ended: the spec allows one, and the first stays the
// client's (a second GET with the same session id is answered 409
// Conflict), unless the second resumes with an id of its events. Over Streamable HTTP, st starts with the kept events after
// lastID (the client's Last-Event-ID; "" for none), and last is the id of
// the last event sent so far when none was queued (for a priming event).
func (ss *sessionStream) claimStandalone(st *stream, lastID string) (last string, replayed int, ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var replay []keptEvent
	resumes := false
	if !ss.legacy && lastID != "" {
		replay, resumes = ss.log.after(lastID)
	}
	if !ss.takeStandalone(st, resumes) {
		return "", 0, false
	}
	if ss.legacy {
		return "", 0, true
	}
	st.ids = true
	for _, e := range replay {
		_ = st.put(framed(ss.log.id(e.seq), e.msg), e.note) // the outbox holds as many as are kept
	}
	if len(replay) > 0 {
		return "", len(replay), true
	}
	return ss.log.id(ss.log.seq), 0, true
}

// takeStandalone makes st the session's GET stream, unless the session
// ended, or one is open and st does not resume it: a client resuming with
// an id of this session's stream (which only that stream carried) takes
// it over, its old connection most likely dead and not yet noticed. The
// old stream ends; what it had not sent is replayed on st. ss.mu is held.
func (ss *sessionStream) takeStandalone(st *stream, resumes bool) bool {
	select {
	case <-ss.closed:
		return false
	default:
	}
	if ss.standalone != nil {
		if !resumes {
			return false
		}
		ss.standalone.out().Close()
	}
	ss.standalone = st
	return true
}

// standaloneOpen reports whether the session's GET stream is open here.
func (ss *sessionStream) standaloneOpen() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.standalone != nil
}

func (ss *sessionStream) clearStandalone(st *stream) {
	st.out().Close()
	ss.mu.Lock()
	if ss.standalone == st {
		ss.standalone = nil
	}
	ss.mu.Unlock()
}

// backlogged reports whether the standalone stream holds n or more
// unread answers.
func (ss *sessionStream) backlogged(n int) bool {
	ss.mu.Lock()
	st := ss.standalone
	ss.mu.Unlock()
	return st != nil && st.out().Full(n)
}
