package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// headerSessionID is the Streamable HTTP session header.
const headerSessionID = "Mcp-Session-Id"

// streamable serves the Streamable HTTP transport at /mcp: POST for client
// messages, GET for the stream of messages the hub starts, DELETE to end a
// session (MCP spec, basic/transports).
func (s *HTTPServer) streamable(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		hs, ok := s.session(w, r)
		if !ok {
			return
		}
		s.drop(hs)
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// session finds the request's session, answering 400 when it names none
// and 404 when it names one that does not exist (any more).
func (s *HTTPServer) session(w http.ResponseWriter, r *http.Request) (*httpSession, bool) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		writeJSONError(w, http.StatusBadRequest, nil, errorf(codeInvalidRequest, "Bad Request: "+headerSessionID+" header is required"))
		return nil, false
	}
	hs := s.lookup(id)
	if hs == nil {
		writeJSONError(w, http.StatusNotFound, nil, errorf(codeInvalidRequest, "Session not found"))
		return nil, false
	}
	hs.touch()
	return hs, true
}

// readMessage reads and parses one message, answering the client itself
// when the body is over the size limit or not a valid message.
func (s *HTTPServer) readMessage(w http.ResponseWriter, r *http.Request) (*envelope, []byte, bool) {
	limit := s.hub.config().Settings.MaxMessageSize
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, nil, errorf(codeParseError, "read body: "+err.Error()))
		return nil, nil, false
	}
	if len(body) > limit {
		writeJSONError(w, http.StatusRequestEntityTooLarge, jsonrpc.IDOf(body), errorf(codeInvalidRequest, fmt.Sprintf("message is over the %d byte limit", limit)))
		return nil, nil, false
	}
	msg, errResp := parseMessage(body)
	if errResp != nil {
		writeJSON(w, http.StatusBadRequest, nil, errResp)
		return nil, nil, false
	}
	return msg, body, true
}

func (s *HTTPServer) post(w http.ResponseWriter, r *http.Request) {
	msg, body, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	var hs *httpSession
	initialize := msg.Method == "initialize"
	// 2026-07-28 has no handshake: a request without a session gets one
	// for itself alone.
	if r.Header.Get(headerSessionID) == "" && (initialize || msg.isRequest() && modern(msg.Params)) {
		var err error
		if hs, err = s.newHTTPSession(); err != nil {
			writeJSONError(w, http.StatusInternalServerError, msg.ID, errorf(codeInternalError, err.Error()))
			return
		}
		if !initialize {
			defer s.drop(hs)
		}
	} else if hs, ok = s.session(w, r); !ok {
		return
	}
	ctx := s.hub.mcp.WithContext(hs.ctx, hs.session)
	switch {
	case msg.isNotification():
		s.hub.serveNotification(ctx, hs.session, msg, body)
		w.WriteHeader(http.StatusAccepted)
		return
	case !msg.isRequest():
		s.hub.serveResponse(hs.session, msg)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	header := http.Header{}
	if initialize {
		header.Set(headerSessionID, hs.id)
	}
	if acceptsSSE(r) && streams(msg.Method) {
		st := openStream(w, header)
		hs.addStream(st)
		defer hs.removeStream(st)
		if resp := s.hub.serveRequest(context.WithValue(ctx, streamKey{}, st), hs.session, msg, body); resp != nil {
			st.send(resp)
		}
		st.close()
		return
	}
	resp := s.hub.serveRequest(ctx, hs.session, msg, body)
	if resp == nil { // cancelled by the client: no answer
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(w, http.StatusOK, header, resp)
}

// streams says which requests are answered with an SSE stream, when the
// client accepts one: those during which the hub may send progress, log
// messages or requests of its own.
func streams(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

func acceptsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// get opens the stream of messages the hub starts for a session.
func (s *HTTPServer) get(w http.ResponseWriter, r *http.Request) {
	if !acceptsSSE(r) {
		http.Error(w, "Not Acceptable: GET /mcp serves text/event-stream", http.StatusNotAcceptable)
		return
	}
	hs, ok := s.session(w, r)
	if !ok {
		return
	}
	st := openStream(w, nil)
	hs.mu.Lock()
	if old := hs.standalone; old != nil {
		old.close()
	}
	hs.standalone = st
	hs.mu.Unlock()
	s.hold(r, hs, st)
	hs.mu.Lock()
	if hs.standalone == st {
		hs.standalone = nil
	}
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSONError(w http.ResponseWriter, status int, id []byte, err *rpcError) {
	writeJSON(w, status, nil, errorResponse(id, err))
}
