package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Per-user sign-ins (a server's auth: per-user, see upstream/peruser.go):
// the session tells the upstream layer whose calls it makes (UserKey), and
// a call of a user who has not signed in is answered with a
// URLElicitationRequiredError (-32042, MCP 2025-11-25) whose message and
// URL elicitation carry a link to the hub's own sign-in page for that
// user, minted by the face the session came through (SignInLinker).

// codeURLElicitationRequired is URLElicitationRequiredError.
const codeURLElicitationRequired = -32042

// SignInLinker is how a face sends its caller to sign in to a server
// through the hub (SessionOptions.SignIn): SignInLink is a URL, single use and short-lived, bound
// to the caller, that runs the server's OAuth flow and keeps the token for
// that caller alone. The HTTP face's sessions are.
type SignInLinker interface {
	// SignInLink is the link, and a channel closed once the caller has
	// signed in through it; then the client is told that the URL
	// elicitation elicitationID is complete (notifications/elicitation/complete).
	SignInLink(server, elicitationID string) (link string, done <-chan struct{}, err error)
}

// UserKey is the session's caller's key among all callers (see
// identity.Identity.Key), "" when the face knows no caller or checked no
// token: a server's auth: per-user then behaves as shared (stdio is one
// user). It makes the session an upstream.UserOwner.
func (s *session) UserKey() string {
	if s.who == nil || s.who.Kind == identity.KindNone || s.who.Subject == "" {
		return ""
	}
	return s.who.Key()
}

// signIn is res and err, unless err says the caller must sign in to s (a
// per-user server): then a client that can answer an elicitation in URL
// mode is sent one with a link to sign in, and once it accepted and the
// sign-in is done (within timeout) the request is sent again; otherwise,
// or when it declines, the answer is the error -32042 with the link (in
// its message too, for clients without URL elicitation). owner is whose
// call it is (see requestOn): its client is the one sent to sign in.
func (h *Hub) signIn(ctx context.Context, owner any, s *upstream.Server, on upstream.ConnID, method string, params any, timeout time.Duration, res json.RawMessage, conn upstream.ConnID, err error) (json.RawMessage, upstream.ConnID, error) {
	var need *upstream.SignInRequired
	if !errors.As(err, &need) {
		return res, conn, err
	}
	var linker SignInLinker
	switch o := owner.(type) {
	case *session:
		linker = o.linker
	case *rounds.Held:
		linker = o.Linker()
	}
	if linker == nil {
		return nil, 0, fmt.Errorf("%v; this client cannot be sent to sign in (per-user sign-ins run through the hub's HTTP face)", need)
	}
	elicitationID := "sign-in-" + rand.Text()
	link, done, lerr := linker.SignInLink(need.Server, elicitationID)
	if lerr != nil {
		return nil, 0, fmt.Errorf("%v; no sign-in link: %v", need, lerr)
	}
	elicit := map[string]any{
		"mode": "url", "elicitationId": elicitationID, "url": link,
		"message": "Sign in to " + need.Server + " to let the hub call it for you",
	}
	b, _ := json.Marshal(elicit)
	// The question and the sign-in together take at most the call's
	// timeout; then the call is answered with the link.
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if answer, aerr := h.routes.Request(ectx, upstream.Event{Server: s, Method: "elicitation/create", Params: b, Owner: owner}); aerr == nil && accepted(answer) {
		select {
		case <-done:
			return s.RequestOn(ctx, owner, on, method, params, timeout)
		case <-ectx.Done():
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
		}
	}
	msg := fmt.Sprintf("%v. Sign in at %s (the link is yours alone and works once, for 10 minutes), then call again.", need, link)
	return nil, 0, &jsonrpc.Error{Code: codeURLElicitationRequired, Message: msg, Data: map[string]any{"elicitations": []map[string]any{elicit}}}
}

// accepted reports whether an elicitation's answer is accept.
func accepted(answer json.RawMessage) bool {
	var a struct {
		Action string `json:"action"`
	}
	return json.Unmarshal(answer, &a) == nil && a.Action == "accept"
}
