package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// What the hub declares to an upstream in its handshake is known before
// it dials, never waited for: a 2026-07-28 client states its capabilities
// in every request rather than once, and a hub that serves many clients
// has no one client's to give. A shared connection declares what the
// manager was told (SetClientCapabilities; DeclaredCapabilities unless
// told otherwise), and the hub refuses each request of the upstream's
// that the client it belongs to cannot answer. A connection of one
// client's own (isolation: per-session) declares exactly what that client
// stated, when it has.

// DeclaredCapabilities are what the hub declares to shared connections
// unless told otherwise: it can pass on sampling, elicitation in form mode
// and roots, with roots/list_changed, to the client a request belongs to,
// and refuses each to a client that did not state it. A server may
// therefore offer the hub tools that a client lacking one of them could
// not run directly (the everything server's trigger-sampling-request to a
// client that does not sample): a call of one gets that refusal as its
// error. URL mode is not declared: a server offers tools that need it to
// every client of the connection, and most clients cannot open a URL for
// it; a connection of one client's own declares it where the client did.
func DeclaredCapabilities() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{
		// MCP Apps (ext-apps "Capability Negotiation"): a server that
		// offers its tools' views only to a host that renders them offers
		// them to the hub, which passes them on with their ui:// resources;
		// a tool with a view answers every client in text as well.
		Extensions:  map[string]any{"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}},
		Sampling:    &mcp.SamplingCapability{},
		Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}},
		Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true},
	}
}

// declared is what a connection for owner declares: the owner's client's
// capabilities when it stated them (Owner.ClientCapabilities), else the
// manager's (owner nil: a shared connection).
func (m *Manager) declared(owner Owner) mcp.ClientCapabilities {
	if owner != nil {
		if caps, known := owner.ClientCapabilities(); known {
			return caps
		}
	}
	return *m.caps.Load()
}

// maxOutstanding caps the requests one server may have waiting for the
// client's answer (sampling, elicitation, roots). Each holds a goroutine
// and its params until answered or until its deadline; a client answers
// few at a time (a user reads each elicitation), so 64 leaves honest
// servers room while a server that floods the client costs little. Those
// beyond it are refused at once.
const maxOutstanding = 64

// maxOutstandingPerOwner is each client session's share of those: one
// that holds its questions open (a 2026-07-28 client that never sends the
// next round, a user away from an elicitation) fills its own share and
// no one else's, so four such sessions are needed to fill the server's
// slots rather than one. A fixed share, not 64/N of the sessions there
// are: a session never loses slots it holds to one that comes later.
// Requests of no known owner are bounded by maxOutstanding alone: the
// hub passes them only to a hub's single session.
const maxOutstandingPerOwner = 16

// codeServerError is the JSON-RPC code of the hub's own refusals of a
// server's requests: too many outstanding, or no answer in time
// (JSON-RPC 2.0 section 5.1 leaves -32000 to -32099 to implementations).
const codeServerError = -32000

// request answers one request from the server. ping is answered here; the
// rest go to the hub as an EventRequest, at most maxOutstanding at a time,
// each answered with an error when the client has not answered within the
// server's call timeout. ctx is the connection's for the request: it
// ends when the server cancels it or the connection closes. related is
// the request of ours it came in the answer to, where the transport says
// (conn.relatedCall), else zero. user is the user whose own connection
// (auth: per-user) it came on, "" for any other (see Event.User): ctx then
// names that connection (withConn), so that only the calls on it are
// looked at, never another user's on theirs.
func (s *Server) request(ctx context.Context, related trackedCall, only Owner, user userConn, method string, params json.RawMessage) (json.RawMessage, error) {
	if method == string(mcp.MethodPing) {
		return json.RawMessage(`{}`), nil
	}
	// The request keeps the values of the call it came during, and its
	// owner (which client session it is for), but not its cancellation:
	// on stdio that call is only known when one client's calls are in
	// flight (see callContext), and the server is owed an answer either
	// way. only is the owner of the connection it came on, if its own.
	cctx, owner, part, ambiguous := s.callContext(ctx, related, only)
	if user != "" && owner == nil && !ambiguous {
		owner = user // no call of the user's known: the user's, no one else's
	}
	release, err := s.takeOutstanding(owner, method)
	if err != nil {
		return nil, err
	}
	defer release()
	timeout := time.Duration(s.callTimeout.Load())
	rctx, cancel := context.WithTimeout(context.WithoutCancel(cctx), timeout)
	defer cancel()
	s.mu.Lock()
	life := s.ctx
	s.mu.Unlock()
	if life != nil {
		// Closing the server ends its requests.
		defer context.AfterFunc(life, cancel)()
	}
	defer context.AfterFunc(ctx, cancel)() // the transport gave up on it

	r := newReply()
	if !s.mgr.put(rctx, Event{Kind: EventRequest, Server: s, Method: method, Params: params, Context: rctx, Owner: owner, Part: part, OwnConn: only != nil, User: string(user), Ambiguous: ambiguous, reply: r}) {
		return nil, s.requestFailed(rctx, method, timeout)
	}
	select {
	case a := <-r.ch:
		if a.err != nil && rctx.Err() != nil && errors.Is(a.err, rctx.Err()) {
			return nil, s.requestFailed(rctx, method, timeout)
		}
		return a.result, a.err
	case <-rctx.Done():
		return nil, s.requestFailed(rctx, method, timeout)
	}
}

// sharedRequest answers one request from the server on a connection of
// no one owner's own (see request).
func (s *Server) sharedRequest(ctx context.Context, related trackedCall, method string, params json.RawMessage) (json.RawMessage, error) {
	return s.request(ctx, related, nil, "", method, params)
}

// requestFailed is the error a request from the server gets when ctx ended
// before the client answered.
func (s *Server) requestFailed(ctx context.Context, method string, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &RPCError{Code: codeServerError, Message: fmt.Sprintf("dynamic-mcp: the client did not answer %s within %s", method, timeout)}
	}
	return &RPCError{Code: codeServerError, Message: "dynamic-mcp: " + method + " cancelled before the client answered"}
}

// takeOutstanding takes a slot for a request of the server's for owner
// (nil: no known owner), within maxOutstanding and the owner's share;
// release gives it back. Those beyond either are refused at once.
func (s *Server) takeOutstanding(owner Owner, method string) (release func(), err error) {
	if owner != nil {
		s.ownersMu.Lock()
		if s.owners[owner] >= maxOutstandingPerOwner {
			s.ownersMu.Unlock()
			return nil, &RPCError{Code: codeServerError,
				Message: fmt.Sprintf("dynamic-mcp: too many requests outstanding for this client session (at most %d of the %d per server); %s refused", maxOutstandingPerOwner, maxOutstanding, method)}
		}
		s.owners[owner]++
		s.ownersMu.Unlock()
	}
	untake := func() {
		if owner == nil {
			return
		}
		s.ownersMu.Lock()
		if s.owners[owner]--; s.owners[owner] == 0 {
			delete(s.owners, owner)
		}
		s.ownersMu.Unlock()
	}
	select {
	case s.outstanding <- struct{}{}:
		return func() { <-s.outstanding; untake() }, nil
	default:
		untake()
		return nil, &RPCError{Code: codeServerError,
			Message: fmt.Sprintf("dynamic-mcp: too many requests outstanding (at most %d per server); %s refused", maxOutstanding, method)}
	}
}
