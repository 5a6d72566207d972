package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/panics"
	"github.com/dynamic-mcp/dynamic-mcp/server/relay"
	"github.com/dynamic-mcp/dynamic-mcp/server/signin"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// headerSessionID is the Streamable HTTP session header.
const headerSessionID = "Mcp-Session-Id"

// streamable serves the Streamable HTTP transport at /mcp: POST for client
// messages, GET for the stream of messages the hub starts, DELETE to end a
// session (MCP spec, basic/transports).
func (s *Server) streamable(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		httpguard.CloseUnread(w, r) // only a POST's body is read
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		if refuseModernStream(w, r) {
			return
		}
		s.get(w, r)
	case http.MethodDelete:
		if refuseModernStream(w, r) {
			return
		}
		hs, ok := s.session(w, r, nil)
		if !ok {
			return
		}
		if s.sealer != nil && hs.transport == "streamable-http" {
			// Remembered as ended until any id of it has expired.
			s.ended.add(hs.id, s.now().Add(sealedLifetime))
		}
		if hs.stream != "" {
			s.relay.End(hs.st.relayed)
		}
		s.sessions.drop(hs)
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// session finds the request's session, answering 400 when it names none
// and 404 when it names one that does not exist (any more) or that
// another credential made; reqID is the id of the request refused so (nil
// for none).
func (s *Server) session(w http.ResponseWriter, r *http.Request, reqID json.RawMessage) (*httpSession, bool) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		writeJSONError(w, http.StatusBadRequest, reqID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Bad Request: "+headerSessionID+" header is required"))
		return nil, false
	}
	var hs *httpSession
	if s.sealer != nil {
		var status int
		if hs, status = s.sealedSession(r, id); status == http.StatusServiceUnavailable {
			unavailable(w, "cannot resume the session here now")
			return nil, false
		}
	} else if hs = s.sessions.owned(id, httpguard.CredentialOf(r.Context())); hs != nil && hs.profile != profileOf(r) {
		hs = nil // a session is found at its own profile's URL only
	}
	if hs == nil || profileStale(s.opts.Auth, hs, r) {
		writeJSONError(w, http.StatusNotFound, reqID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Session not found"))
		return nil, false
	}
	hs.touch()
	return hs, true
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	msg, body, release, ok := s.bodies.readMessage(w, r)
	if !ok {
		return
	}
	if modernRequest(r, msg) {
		s.postModern(w, r, msg, body, release)
		return
	}
	if modernNotification(r, msg) {
		s.modern.notify(w, r, msg, body, release)
		return
	}
	var hs *httpSession
	initialize := msg.Method == "initialize"
	fresh := r.Header.Get(headerSessionID) == "" && initialize // a session made for this initialize
	if fresh && !msg.IsRequest() {
		// An initialize sent as a notification: nothing answers it, and
		// no session is made for it (nobody would be told its id).
		release()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if fresh {
		if hs, ok = s.oneSession(w, r, msg, release); !ok {
			return
		}
	} else if hs, ok = s.session(w, r, msg.ID); !ok {
		release()
		return
	}
	if !msg.IsRequest() {
		// A notification or an answer to a request of the hub's: the
		// session's Conn takes it (notifications/cancelled included),
		// unless it is another replica's (server/relay).
		defer release()
		if hs.stream != "" {
			if relayed, err := s.relay.Relays(hs.st.relayed, msg, body); errors.Is(err, relay.ErrDown) {
				unavailable(w, err.Error())
				return
			} else if err != nil {
				w.Header().Set("Retry-After", "1")
				writeJSONError(w, http.StatusTooManyRequests, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Too Many Requests: "+err.Error()))
				return
			} else if relayed {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		}
		// Taken here, on this goroutine: a notification is acted on
		// before the client has its 202.
		if _, ok := hs.conn.Take(msg); !ok {
			writeJSONError(w, http.StatusNotFound, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Session not found"))
			return
		}
		if hs.stream != "" && msg.Method == "notifications/cancelled" {
			s.relay.Cancelled(hs.st.relayed, body) // after: the request may run here
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var header http.Header // what the answer's headers add: none but an initialize's session id
	if initialize {
		header = http.Header{headerSessionID: {hs.id}}
	}
	if msg.Method == methodListen {
		s.listen(w, r, hs, msg, header, func([]byte) int { return http.StatusOK }, release) // before 2026-07-28 every answer is 200
		return
	}
	if msg.Method == "logging/setLevel" && hs.stream != "" {
		s.relay.Level(hs.st.relayed, body) // every replica that holds the session logs at it
	}
	if answer, taken := s.request(w, r, hs, msg, body, header, release); fresh && (!taken || !succeeded(answer)) {
		// Refused, failed or never answered: its client was not told of
		// the session (an initialize's error names none, answerHeader),
		// which would otherwise live on unused until the idle sweep.
		s.sessions.drop(hs)
	}
}

// succeeded reports whether answer, a response written, is a result.
func succeeded(answer []byte) bool {
	o, err := jsonrpc.ScanObject(answer)
	return err == nil && o.Field("result") != nil
}

// postModern serves a request of 2026-07-28, which has no handshake and no
// sessions: its headers are checked against its body, and it is answered
// without a session, whatever Mcp-Session-Id it carries (the spec has the
// header ignored); a listen, in a session for itself alone.
func (s *Server) postModern(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte, release func()) {
	if e := checkHeaders(r.Header, msg); e != nil {
		release()
		writeJSONError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
	if msg.Method == methodListen {
		// A listen holds its session as long as it is open: one client's
		// listens may not take every session.
		cred := httpguard.CredentialOf(r.Context())
		if !s.listens.take(cred, maxListens(s.opts.MaxSessions)) {
			release()
			unavailable(w, "too many listens open")
			return
		}
		defer s.listens.give(cred)
	}
	if msg.Method != methodListen {
		s.answerSessionless(w, r, msg, body, release) // sessionless.go
		return
	}
	hs, ok := s.oneSession(w, r, msg, release)
	if !ok {
		return
	}
	hs.oneRequest.Store(true) // nowhere for the client to answer a request of the hub's
	defer s.sessions.drop(hs)
	// For its cancellation (modernnotify.go): its Conn takes it.
	defer s.modern.track(httpguard.CredentialOf(r.Context()), msg.ID, func(ctx context.Context, body []byte) { hs.st.deliver(ctx, body) })()
	s.listen(w, r, hs, msg, http.Header{}, modernStatus, release) // the session lasts as long as the listen
}

// oneSession opens a session for msg, a legacy initialize or a request of
// 2026-07-28, answering w (and releasing the body) when it cannot.
func (s *Server) oneSession(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, release func()) (*httpSession, bool) {
	hs, err := s.newSession("streamable-http", httpguard.CredentialOf(r.Context()), profileOf(r), signin.PublicBase(r), httpguard.IdentityOf(r.Context()),
		msg.Method == "initialize" && r.Header.Get(headerSessionID) == "")
	switch {
	case errors.Is(err, identity.ErrProfileNotAllowed):
		release()
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return nil, false
	case errors.Is(err, errTooManySessions):
		release()
		unavailable(w, "too many sessions, none idle")
		return nil, false
	case errors.Is(err, errClosed):
		release()
		unavailable(w, "the server is shutting down")
		return nil, false
	case err != nil:
		release()
		writeJSONError(w, http.StatusInternalServerError, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, err.Error()))
		return nil, false
	}
	return hs, true
}

// request answers a client request on a POST: the session's Conn answers
// it, on this goroutine (Conn.Take), and the session's stream routes the
// answer, and what relates to the request, here. The answer is plain JSON
// unless something must reach the client before it (progress, a log
// message, a request of the hub's during a tool call): then, and only
// then, the response becomes an event stream, with the answer as its last
// event.
//
// release gives back the body's bytes once the session's Conn has taken
// the message, not when it is answered: a long call does not hold the
// budget of bodies being read. The request counts against the cap in all
// until it is answered. taken is false when the Conn did not take it
// (refused: too many in flight, its id in use, the session ended);
// answer is the answer written, nil when none was (cancelled, the client
// gone).
func (s *Server) request(w http.ResponseWriter, r *http.Request, hs *httpSession, msg *jsonrpc.Message, body []byte, header http.Header, release func()) (answer []byte, taken bool) {
	p, ok := s.inflight.expect(w, hs, msg, header, release, http.StatusOK, streamOf(r))
	if !ok {
		return nil, false
	}
	// A 2026-07-28 answer's status says what its error is.
	status := func([]byte) int { return http.StatusOK }
	if modernRequest(r, msg) {
		status = modernStatus
	}
	// Once the Conn has msg it owns it (it swaps msg.ID for a copy of its
	// own): this goroutine reads the id it had before handing it over.
	id := msg.ID
	delivered := false
	defer func() { hs.st.forget(id, p, delivered); hs.touch() }()
	serve, delivered := hs.conn.Take(msg)
	release() // the Conn has the message: its bytes are the call's, not a body being read
	if !delivered {
		writeJSONError(w, http.StatusNotFound, id, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Session not found"))
		return nil, false
	}
	respond := func() { answer = s.respond(w, r, hs, p, header, status) }
	if serve != nil && p.serveHere(serve, respond, s.hub.Panics()) {
		return answer, true // the goroutine serveHere started has responded, and is done
	}
	respond()
	return answer, true
}

// serveHere answers the request on this goroutine (serve), and reports
// whether the response was written meanwhile: what the hub sends down the
// POST's stream before the answer (progress, a request of the hub's the
// client must answer for the call to go on) cannot wait for it, so the
// first such message starts a goroutine that responds (respond) as the
// POST's handler would; serveHere then waits for it. A POST without a
// stream of its own has nothing to write before its answer. A panic of
// respond's is counted in panics.
func (p *post) serveHere(serve, respond func(), panics *panics.Counter) bool {
	if p.out == nil {
		serve()
		return false
	}
	p.respond, p.panics = respond, panics
	p.responded.Add(1) // done by whoever ends the serving: below, or the goroutine wake starts
	p.out.woken.Store(p)
	if p.out.queued() > 0 {
		p.wake() // put before the hook was: a request of the hub's sent down the POST stream opened last
	}
	serve()
	if p.state.CompareAndSwap(serving, served) {
		p.responded.Done()
		return false
	}
	p.responded.Wait()
	return true
}

// The states of a post its handler serves (serveHere).
const serving, responding, served = 0, 1, 2

// wake starts the goroutine that responds, once, if the handler is still
// serving the request (serveHere): a message was put on its stream.
func (p *post) wake() {
	if p.state.CompareAndSwap(serving, responding) {
		go func() {
			defer p.responded.Done()
			defer func() {
				if v := recover(); v != nil { // net/http's recover is the handler's goroutine's only
					p.panics.Recovered("", v, debug.Stack())
				}
			}()
			p.respond()
		}()
	}
}

// respond writes the response to a request the session's Conn has: its
// answer as plain JSON, or what was sent down the POST's stream before it
// and then the answer, as an event stream. It returns the answer it
// wrote, nil when none (cancelled by the client, or the client gone).
func (s *Server) respond(w http.ResponseWriter, r *http.Request, hs *httpSession, p *post, header http.Header, status func([]byte) int) []byte {
	if p.out == nil || p.out.queued() == 0 {
		// Most often the answer is there already, and nothing came
		// before it (serveHere served the request on this goroutine): it
		// is written without waiting on anything else.
		select {
		case resp := <-p.answer:
			if resp == nil {
				w.WriteHeader(http.StatusAccepted) // cancelled by the client: no answer
				return nil
			}
			if p.out == nil || p.out.queued() == 0 {
				writeJSON(w, status(resp), s.answerHeader(hs, header, resp), resp)
				return resp
			}
			p.answer <- resp // something came after all: below, as an event stream
		default:
		}
	}
	var sw *sseWriter
	var ready <-chan struct{}
	if p.out != nil {
		ready = p.out.out().Ready()
	}
	for {
		select {
		case resp := <-p.answer:
			var early [][]byte
			if p.out != nil {
				early = p.out.out().TakeNow()
			}
			switch {
			case resp == nil && sw == nil:
				w.WriteHeader(http.StatusAccepted) // cancelled by the client: no answer
			case sw == nil && len(early) == 0:
				writeJSON(w, status(resp), s.answerHeader(hs, header, resp), resp)
			default:
				if sw == nil {
					sw = newSSEWriter(w, s.opts.writeTimeout)
					if sw.start(s.answerHeader(hs, header, resp)) != nil {
						return nil
					}
				}
				if resp != nil {
					early = append(early, resp)
				}
				_ = sw.events("message", early, false)
			}
			return resp
		case <-ready:
			batch := p.out.out().TakeNow()
			if len(batch) == 0 {
				continue
			}
			if sw == nil {
				sw = newSSEWriter(w, s.opts.writeTimeout)
				if sw.start(s.sealer.sessionHeader(hs, header, s.now, s.logger)) != nil {
					return nil
				}
			}
			if sw.events("message", batch, false) != nil {
				return nil // the client stopped reading this stream
			}
		case <-r.Context().Done():
			return nil
		case <-hs.st.Done():
			return nil
		case <-s.stop:
			return nil
		}
	}
}

// answerHeader is the header of a response whose answer is resp, nil
// before it (an event stream that opens first): header, with the
// session's id sealed in it (sealer.sessionHeader), except that an
// initialize answered with an error names no session (post ends the one
// made for it).
func (s *Server) answerHeader(hs *httpSession, header http.Header, resp []byte) http.Header {
	if resp != nil && header.Get(headerSessionID) != "" && !succeeded(resp) {
		header = header.Clone()
		header.Del(headerSessionID)
		return header
	}
	return s.sealer.sessionHeader(hs, header, s.now, s.logger)
}

func acceptsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// streamOf is the stream a request's answer may go down: its POST's own
// when the client accepts an event stream.
func streamOf(r *http.Request) streamKind {
	if acceptsSSE(r) {
		return ownStream
	}
	return noStream
}

// get opens the stream of messages the hub starts for a session.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if !acceptsSSE(r) {
		http.Error(w, "Not Acceptable: GET /mcp serves text/event-stream", http.StatusNotAcceptable)
		return
	}
	hs, ok := s.session(w, r, nil)
	if !ok {
		return
	}
	// The stream is the session's before the client sees it open, so that
	// nothing sent once it has is sent elsewhere. The spec allows one GET
	// stream a session: a second is refused while the first is open, so
	// that no one who learns a session id can take its stream over.
	// A client that resumes (Last-Event-ID) gets the events it missed
	// first (eventlog.go).
	st := newStream()
	lastID := r.Header.Get("Last-Event-ID")
	var last string
	var replayed int
	if hs.stream != "" {
		if !s.relay.AllowedGET(hs.st.relayed, lastID != "") {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too Many Requests: "+relay.ErrBudget.Error(), http.StatusTooManyRequests)
			return
		}
		var status int
		if last, status = claimRelayed(s.relay, hs, st, lastID); status == http.StatusServiceUnavailable {
			unavailable(w, "the store does not answer")
			return
		}
		ok = status == 0
	} else {
		last, replayed, ok = hs.st.claimStandalone(st, lastID)
	}
	if !ok {
		http.Error(w, "Conflict: the session's GET stream is already open", http.StatusConflict)
		return
	}
	if lastID != "" {
		s.logger.Debug("a GET stream resumed", "session", hs.id, "replayed", replayed, "known_id", replayed > 0 || last == lastID)
	}
	defer hs.clearStandalone(st)
	sw := newSSEWriter(w, s.opts.writeTimeout)
	if sw.start(nil) != nil {
		return
	}
	// The priming event is 2025-11-25's: an older client may not take an
	// event without a message.
	if v := r.Header.Get(headerProtocolVersion); last != "" && v >= "2025-11-25" && sw.prime(last) != nil {
		return
	}
	sw.pump(r, hs, st, s.stop, s.draining)
}
