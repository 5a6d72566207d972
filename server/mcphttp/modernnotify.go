package mcphttp

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A client of 2026-07-28 has no session: each notification it sends is a
// POST of its own, accepted with 202 (basic/transports/streamable-http,
// "Sending Messages"). Only a cancellation has something here to act on:
// a request of the same caller still in flight, each in a session of its
// own (postModern). That version makes closing the request's stream the
// cancellation, which ends the request too; some clients (go-sdk's) send
// notifications/cancelled besides, and one refused 400 made go-sdk close.

// modernNotification reports whether msg, POSTed without a session, is a
// notification of 2026-07-28 or later: its MCP-Protocol-Version header or
// its _meta says so. Its _meta is not required: go-sdk sends none on a
// notification, and the schema has it optional there.
func modernNotification(r *http.Request, msg *jsonrpc.Message) bool {
	return msg.IsNotification() && r.Header.Get(headerSessionID) == "" &&
		(mcp.IsModernProtocol(r.Header.Get(headerProtocolVersion)) || mcp.IsModernProtocol(server.ProtocolVersion(msg)))
}

// notify takes a notification of 2026-07-28: a cancellation is
// handed to the session of the request it names, when that request is
// the caller's and in flight here; anything else has nothing to act on.
// Either way it is accepted, as the spec asks of a cancellation of a
// request unknown or already answered.
func (m *modernCalls) notify(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte, release func()) {
	defer release()
	if msg.Method == string(mcp.MethodNotificationCancelled) {
		if cancel := m.find(httpguard.CredentialOf(r.Context()), jsonrpc.Field(msg.Params, "requestId")); cancel != nil {
			cancel(r.Context(), body)
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// modernCalls are the 2026-07-28 requests in flight on this face, by
// caller (the credential, httpguard.CredentialOf) and id, each with how
// to cancel it (given the cancellation's body: a listen's session's Conn
// takes it), so that a cancellation finds its request and no other
// caller's.
type modernCalls struct {
	mu    sync.Mutex // guards calls
	calls map[modernCall][]*modernCancel
}

// modernCancel cancels one request, given the body of its cancellation.
type modernCancel struct {
	cancel func(ctx context.Context, body []byte)
}

type modernCall struct{ caller, id string }

// track registers the request with id of caller, which cancel cancels;
// the func it returns forgets it. The id is copied: nothing here holds
// the body.
func (m *modernCalls) track(caller string, id json.RawMessage, cancel func(ctx context.Context, body []byte)) (untrack func()) {
	k := modernCall{caller, string(id)}
	hs := &modernCancel{cancel}
	m.mu.Lock()
	if m.calls == nil {
		m.calls = map[modernCall][]*modernCancel{}
	}
	m.calls[k] = append(m.calls[k], hs)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		in := m.calls[k]
		for i, x := range in {
			if x == hs {
				in = append(in[:i:i], in[i+1:]...)
				break
			}
		}
		if len(in) == 0 {
			delete(m.calls, k)
		} else {
			m.calls[k] = in
		}
	}
}

// find cancels caller's request with id; nil when there is none, or
// several (two clients of one credential whose ids meet): which one is
// meant cannot be told, and closing its stream cancels it anyway.
func (m *modernCalls) find(caller string, id json.RawMessage) func(ctx context.Context, body []byte) {
	if id == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if in := m.calls[modernCall{caller, string(id)}]; len(in) == 1 {
		return in[0].cancel
	}
	return nil
}
