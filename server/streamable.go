package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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

// readMessage reads and decodes one message, answering the client itself
// when the body is over the size limit or not a valid message.
func (s *HTTPServer) readMessage(w http.ResponseWriter, r *http.Request) (*jsonrpc.Message, bool) {
	limit := s.hub.config().Settings.MaxMessageSize
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, nil, errorf(jsonrpc.CodeParseError, "read body: "+err.Error()))
		return nil, false
	}
	if len(body) > limit {
		writeJSONError(w, http.StatusRequestEntityTooLarge, jsonrpc.IDOf(body), errorf(codeInvalidRequest, fmt.Sprintf("message is over the %d byte limit", limit)))
		return nil, false
	}
	msg, err := jsonrpc.Decode(body)
	if err != nil {
		var de *jsonrpc.DecodeError
		var id json.RawMessage
		if errors.As(err, &de) {
			id = de.ID
		}
		writeJSONError(w, http.StatusBadRequest, id, jsonrpc.ToError(err))
		return nil, false
	}
	return msg, true
}

func (s *HTTPServer) post(w http.ResponseWriter, r *http.Request) {
	msg, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	var hs *httpSession
	initialize := msg.Method == "initialize"
	// 2026-07-28 has no handshake: a request without a session gets one
	// for itself alone.
	if r.Header.Get(headerSessionID) == "" && (initialize || msg.IsRequest() && modern(msg.Params)) {
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
	switch {
	case msg.IsNotification():
		if msg.Method == "notifications/cancelled" {
			hs.inflight.Cancel(msg.Params)
		}
		s.hub.serveNotification(hs.ctx, hs.session, msg)
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.IsResponse():
		hs.calls.Resolve(msg)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	header := http.Header{}
	if initialize {
		header.Set(headerSessionID, hs.id)
	}
	s.request(w, r, hs, msg, header)
}

// request answers a client request on a POST. The answer is plain JSON
// unless something must reach the client before it (progress, a log
// message, a request of the hub's during a tool call): then, and only
// then, the response becomes an event stream, with the answer as its last
// event.
func (s *HTTPServer) request(w http.ResponseWriter, r *http.Request, hs *httpSession, msg *jsonrpc.Message, header http.Header) {
	ctx, end, refused := hs.inflight.Begin(hs.ctx, msg.ID)
	if refused != nil {
		writeJSON(w, http.StatusOK, header, jsonrpc.EncodeError(msg.ID, refused))
		return
	}
	var st *stream
	if acceptsSSE(r) {
		st = newStream()
		hs.addStream(st)
		defer hs.removeStream(st)
		ctx = context.WithValue(ctx, streamKey{}, st)
	}
	answered := make(chan []byte, 1)
	go func() {
		res, err := s.hub.serveRequest(ctx, hs.session, msg)
		if end() {
			answered <- jsonrpc.Answer(msg.ID, res, err)
		} else {
			answered <- nil // cancelled by the client: no answer
		}
	}()
	var sw *sseWriter
	var ready <-chan struct{}
	if st != nil {
		ready = st.out.Ready()
	}
	for {
		select {
		case resp := <-answered:
			var early [][]byte
			if st != nil {
				early = st.out.TakeNow()
			}
			switch {
			case resp == nil && sw == nil:
				w.WriteHeader(http.StatusAccepted)
			case sw == nil && len(early) == 0:
				writeJSON(w, http.StatusOK, header, resp)
			default:
				if sw == nil {
					sw = newSSEWriter(w)
					if sw.start(header) != nil {
						return
					}
				}
				if resp != nil {
					early = append(early, resp)
				}
				_ = sw.events("message", early)
			}
			return
		case <-ready:
			batch := st.out.TakeNow()
			if len(batch) == 0 {
				continue
			}
			if sw == nil {
				sw = newSSEWriter(w)
				if sw.start(header) != nil {
					return
				}
			}
			if sw.events("message", batch) != nil {
				return // the client stopped reading this stream
			}
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
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
	sw := newSSEWriter(w)
	if sw.start(nil) != nil {
		return
	}
	st := newStream()
	hs.setStandalone(st)
	defer hs.clearStandalone(st)
	s.pump(r, hs, st, sw)
}
