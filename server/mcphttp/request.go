package mcphttp

import (
	"context"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// admitted is a client request the face has taken on.
type admitted struct {
	msg     *jsonrpc.Message
	ctx     context.Context   // ends when the client cancels it or the session ends
	end     func(func()) bool // see jsonrpc.Inflight.Begin
	release func()            // gives the body's bytes back
}

// admit takes on a client request of hs, counted against the face's cap
// of requests in flight in all and the session's own (jsonrpc.Inflight:
// its cap, and no id in use twice). Over the face's cap w is answered
// 503; a refusal of the session's is answered on w with the status
// refused gives it and the JSON-RPC error. release gives the body's bytes
// back: once the request is answered, or at once when it is refused. ok
// is false when w has been answered.
func (s *Server) admit(w http.ResponseWriter, hs *httpSession, msg *jsonrpc.Message, header http.Header, release func(),
	refused func(*jsonrpc.Error) int) (*admitted, bool) {
	if !s.beginRequest() {
		release()
		unavailable(w, "too many requests in flight")
		return nil, false
	}
	ctx, end, refusal := hs.inflight.Begin(hs.ctx, msg.ID)
	if refusal != nil {
		s.endRequest()
		release()
		writeJSON(w, refused(refusal), header, jsonrpc.EncodeError(msg.ID, refusal))
		return nil, false
	}
	return &admitted{msg: msg, ctx: ctx, end: end, release: release}, true
}

// run answers an admitted request of hs on a goroutine the face owns
// (Close waits for it), behind the face's panic boundary, and hands the
// encoded answer to deliver once, or nil when the client cancelled the
// request. It is false when the face is closing: the request is ended
// and w answered 503.
func (s *Server) run(w http.ResponseWriter, hs *httpSession, a *admitted, deliver func(answer []byte)) bool {
	ok := s.spawn(func() {
		res, err := s.serve(a.ctx, hs, a.msg)
		s.endRequest()
		a.release()
		if !a.end(func() { deliver(jsonrpc.Answer(a.msg.ID, res, err)) }) {
			deliver(nil)
		}
	})
	if !ok {
		a.end(nil)
		s.endRequest()
		a.release()
		unavailable(w, "the server is shutting down")
	}
	return ok
}
