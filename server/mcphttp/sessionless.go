package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/signin"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A request of 2026-07-28 that came without a session is answered on the
// goroutine net/http read it on (Host.Answer): no session, no Conn, no
// session stream, nothing listed, and no session in the hub either: its
// client there is the request's alone, known to the hub's routes while
// it runs, for its progress (routes.Table.AddUnlisted).
// It used to be answered in a session of its own (3 goroutines, 2
// registries, a hand-off to the session's Conn and back for each
// request). Only a notification sent
// while it runs (progress, a log message), to a client that takes an
// event stream, starts a goroutine: the one that writes the events
// (oneCall.flush), gone before the answer is written.

// answerSessionless answers msg, a request of 2026-07-28 (not a listen,
// which holds a session while it is open) that came without a session.
// release gives the body's bytes back once the hub has the message.
func (s *Server) answerSessionless(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte, release func()) {
	defer release()
	owner, who := httpguard.CredentialOf(r.Context()), httpguard.IdentityOf(r.Context())
	seen, err := identity.ChooseProfile(s.opts.Auth, who, profileOf(r))
	if err != nil {
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if s.draining.on() || s.life.Err() != nil {
		unavailable(w, "the server is shutting down")
		return
	}
	client := s.shares.ClientOf(owner)
	if !s.inflight.begin(client) {
		unavailable(w, "too many requests in flight")
		return
	}
	defer s.inflight.end(client)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.life, cancel)() // Close ends it, as it ends a session's requests
	c := &oneCall{client: client, who: who, base: signin.PublicBase(r), face: s, stop: make(chan struct{}), w: w}
	if acceptsSSE(r) {
		c.out = jsonrpc.NewOutbox(0)
	}
	defer s.modern.track(owner, msg.ID, func(context.Context, []byte) { c.cancelled.Store(true); cancel() })() // modernnotify.go
	var resp []byte
	if more, refuse := s.hub.Inflight().Admit(owner)(int64(len(body))); refuse != nil {
		resp = jsonrpc.EncodeError(msg.ID, refuse)
		release()
	} else {
		release() // the hub has the message: its bytes are the call's, counted by Admit until answered
		c.answering.Store(1)
		res, err := s.hub.Answer(ctx, server.SessionOptions{ID: newSessionID(), Transport: "streamable-http", Profile: seen, Who: who, Peer: c, SignIn: c}, msg)
		c.answering.Store(0)
		more()
		if !c.cancelled.Load() {
			resp = jsonrpc.Answer(msg.ID, res, err)
		}
	}
	c.answer(resp, modernStatus)
}

// oneCall is the server.Peer of a request answered without a session:
// what the hub sends while it runs goes down its response, as events,
// when the client takes an event stream; else it is dropped.
type oneCall struct {
	client    string
	who       *identity.Identity
	base      string
	face      *Server
	out       *jsonrpc.Outbox // nil: the client takes no event stream
	answering atomic.Int32
	cancelled atomic.Bool // by the client's notifications/cancelled: no answer
	dropped   atomic.Uint64

	mu       sync.Mutex // guards flushing and done
	flushing bool       // flush runs
	done     bool       // the answer is being written: no flush starts
	stop     chan struct{}
	wg       sync.WaitGroup
	w        http.ResponseWriter
	sw       *sseWriter // the event stream, once started; flush's while it runs
	broken   bool       // a write failed: the client stopped reading
}

// Notify queues msg for the response and starts its writer, once
// (server.Peer): it never waits on the client.
func (c *oneCall) Notify(_ context.Context, msg []byte) {
	if c.out == nil || c.out.Notify(msg) != nil {
		c.dropped.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.flushing && !c.done {
		c.flushing = true
		c.wg.Add(1)
		go c.flush()
	}
}

// flush writes the queued notifications as events until the answer is
// due.
func (c *oneCall) flush() {
	defer c.wg.Done()
	for {
		select {
		case <-c.out.Ready():
			if !c.write(c.out.TakeNow()) {
				return
			}
		case <-c.stop:
			return
		}
	}
}

// write writes msgs as events, starting the event stream first; false
// once a write failed.
func (c *oneCall) write(msgs [][]byte) bool {
	if c.broken || len(msgs) == 0 {
		return !c.broken
	}
	if c.sw == nil {
		c.sw = newSSEWriter(c.w, c.face.opts.writeTimeout)
		if c.sw.start(nil) != nil {
			c.broken = true
			return false
		}
	}
	c.broken = c.sw.events("message", msgs, false) != nil
	return !c.broken
}

// answer stops the writer of events, then writes resp (nil: the client
// cancelled it) after what is queued: plain JSON with status(resp) when
// nothing else went down the response.
func (c *oneCall) answer(resp []byte, status func([]byte) int) {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
	var early [][]byte
	if c.out != nil {
		early = c.out.TakeNow()
	}
	switch {
	case c.sw == nil && len(early) == 0 && resp == nil:
		c.w.WriteHeader(http.StatusAccepted)
	case c.sw == nil && len(early) == 0:
		writeJSON(c.w, status(resp), nil, resp)
	default:
		if resp != nil {
			early = append(early, resp)
		}
		c.write(early)
	}
}

// Call refuses the hub's request (server.Peer): the client has no session
// to POST an answer to (see httpSession.Call).
func (c *oneCall) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, oneRequestRefusal(method)
}

// oneRequestRefusal refuses the hub's request method to a client whose
// request came without a session: it would wait for an answer that
// cannot come (a client that tries is refused, and go-sdk's then closes
// its connection): 2026-07-28 asks such a client with an input_required
// result (SEP-2322), which the hub sends for tools/call, prompts/get and
// resources/read (server/rounds); what else would ask (a
// policy prompt, a request during another method) cannot.
func oneRequestRefusal(method string) error {
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "dynamic-mcp: "+method+" cannot reach a client whose request came without a session (Mcp-Session-Id): only tools/call, prompts/get and resources/read ask it, by input_required")
}

// Listening does nothing (server.Peer): a listen is answered in a
// session of its own (Server.postModern), never here.
func (c *oneCall) Listening(context.Context) {}

// Dropped is how many notifications were lost for the client (server.Peer).
func (c *oneCall) Dropped() uint64 {
	if c.out != nil {
		return c.dropped.Load() + c.out.Dropped()
	}
	return c.dropped.Load()
}

// Answering is 1 while the request is answered (server.Peer).
func (c *oneCall) Answering() int { return int(c.answering.Load()) }

// Client is the caller's client when clients have shares (see
// httpSession.Client).
func (c *oneCall) Client() string { return c.client }

// SignInLink is a link for the caller to sign in to server
// (server.SignInLinker).
func (c *oneCall) SignInLink(server, elicitation string) (string, <-chan struct{}, error) {
	if c.face == nil {
		return "", nil, errors.New("this session's caller has no identity")
	}
	return c.face.signIns.Link(c.who, c.base, server, elicitation, c)
}
