package server

import (
	"net/http"
)

// legacyStream serves the HTTP+SSE transport of protocol 2024-11-05: GET
// /sse opens a session whose every message from the hub goes down this
// stream, which first names the endpoint to POST to.
func (s *HTTPServer) legacyStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hs, err := s.newHTTPSession()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer s.drop(hs)
	st := openStream(w, nil)
	hs.mu.Lock()
	hs.standalone = st
	hs.mu.Unlock()
	if !st.event("endpoint", []byte("/message?sessionId="+hs.id)) {
		return
	}
	s.hold(r, hs, st)
}

// legacyMessage takes a client message for a legacy SSE session; the
// answer goes down the session's stream.
func (s *HTTPServer) legacyMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hs := s.lookup(r.URL.Query().Get("sessionId"))
	if hs == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	hs.touch()
	msg, body, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	ctx := s.hub.mcp.WithContext(hs.ctx, hs.session)
	switch {
	case msg.isNotification():
		s.hub.serveNotification(ctx, hs.session, msg, body)
	case msg.isRequest():
		go func() {
			if resp := s.hub.serveRequest(ctx, hs.session, msg, body); resp != nil {
				hs.deliver(ctx, resp)
			}
		}()
	default:
		s.hub.serveResponse(hs.session, msg)
	}
	w.WriteHeader(http.StatusAccepted)
}
