package mcphttp

import (
	"errors"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/signin"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// legacyStream serves the HTTP+SSE transport of protocol 2024-11-05: GET
// /sse opens a session whose every message from the hub goes down this
// stream, which first names the endpoint to POST to.
func (s *Server) legacyStream(w http.ResponseWriter, r *http.Request) {
	httpguard.CloseUnread(w, r) // a body is never read here
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hs, err := s.newSession("sse", httpguard.CredentialOf(r.Context()), "", signin.PublicBase(r), httpguard.IdentityOf(r.Context()), false)
	if errors.Is(err, errTooManySessions) {
		unavailable(w, "too many sessions, none idle")
		return
	}
	if errors.Is(err, errClosed) {
		unavailable(w, "the server is shutting down")
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer s.sessions.drop(hs)
	// The stream is the session's before the client learns the endpoint:
	// a client that POSTs at once must find its answer a place to go
	// (what is queued meanwhile is written after the endpoint event).
	st := newStream()
	_, _, _ = hs.st.claimStandalone(st, "") // a new session's: always free
	defer hs.clearStandalone(st)
	sw := newSSEWriter(w, s.opts.writeTimeout)
	if sw.start(nil) != nil || sw.events("endpoint", [][]byte{[]byte("/message?sessionId=" + hs.id)}, false) != nil {
		return
	}
	sw.pump(r, hs, st, s.stop, s.draining)
}

// legacyMessage takes a client message for a legacy SSE session of the
// caller's credential (another's is 404, as an unknown one); the answer
// goes down the session's stream.
func (s *Server) legacyMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		httpguard.CloseUnread(w, r)
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hs := s.sessions.owned(r.URL.Query().Get("sessionId"), httpguard.CredentialOf(r.Context()))
	if hs == nil || profileStale(s.opts.Auth, hs, r) {
		httpguard.CloseUnread(w, r) // refused unread
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	hs.touch()
	msg, _, release, ok := s.bodies.readMessage(w, r)
	if !ok {
		return
	}
	if !msg.IsRequest() {
		defer release()
		if !hs.st.deliverDecoded(r.Context(), msg) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if hs.st.backlogged(hs.inflight) {
		// Every answer goes down the one stream: a client that does not
		// read it cannot have more queued there.
		release()
		writeJSON(w, http.StatusTooManyRequests, nil, jsonrpc.EncodeError(msg.ID,
			jsonrpc.Errorf(jsonrpc.CodeServerBusy, "too many answers waiting on the SSE stream: read it")))
		return
	}
	// A duplicate id is refused on the POST itself: a client that floods
	// requests and does not read its stream cannot queue them there. The
	// answer goes down the session's stream, and releases the request.
	p, ok := s.inflight.expect(w, hs, msg, nil, release, http.StatusBadRequest, noStream)
	if !ok {
		return
	}
	id := msg.ID // the Conn owns msg once it has it (it swaps msg.ID for its own copy)
	delivered := hs.st.deliverDecoded(r.Context(), msg)
	release() // the Conn has the message: its bytes are the call's, not a body being read
	if !delivered {
		hs.st.forget(id, p, false)
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
