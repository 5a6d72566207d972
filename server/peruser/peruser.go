// Package peruser is per-user sign-in's stage of every hop upstream (a
// server's auth: per-user, see upstream/peruser.go): the session tells
// the upstream layer whose calls it makes (call.Owner), and a call
// of a user who has not signed in is answered with a
// URLElicitationRequiredError (-32042, MCP 2025-11-25) whose message and
// URL elicitation carry a link to the hub's own sign-in page for that
// user, minted by the face the session came through (Linker).
package peruser

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// codeURLElicitationRequired is URLElicitationRequiredError.
const codeURLElicitationRequired = -32042

// Linker is how a face sends its caller to sign in to a server through
// the hub (the hub's SessionOptions.SignIn; see call.Linker).
type Linker = call.Linker

// Stage is per-user sign-in's hop stage.
type Stage struct {
	// Ask passes a request to the client of the owner's call, where the
	// client can answer, and returns its answer (the hub's session
	// table's Request).
	Ask func(ctx context.Context, e routes.ServerRequest) (json.RawMessage, error)
}

// Hop sends h on, and answers as it answered, unless it says the caller
// must sign in to h's server (a per-user server): then a client that can
// answer an elicitation in URL mode is sent one with a link to sign in,
// and once it accepted and the sign-in is done (within the hop's timeout)
// the hop is sent again; otherwise, or when it declines, the answer is the
// error -32042 with the link (in its message too, for clients without URL
// elicitation). The owner's client is the one sent to sign in.
func (st Stage) Hop(ctx context.Context, h *call.Hop, next call.HopHandler) (json.RawMessage, upstream.ConnID, error) {
	res, conn, err := next.Hop(ctx, h)
	need, ok := errors.AsType[*upstream.SignInRequired](err) // errors.As's target escaped: an allocation every hop
	if !ok {
		return res, conn, err
	}
	var linker Linker
	if h.Owner != nil {
		linker = h.Owner.Linker() // the session's face, or a held call's caller's
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
	ectx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	if answer, aerr := st.Ask(ectx, routes.ServerRequest{Server: h.Server, Method: "elicitation/create", Params: b, Owner: h.Owner}); aerr == nil && accepted(answer) {
		select {
		case <-done:
			return next.Hop(ctx, h)
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
