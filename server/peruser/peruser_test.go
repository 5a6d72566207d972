package peruser

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/call/calltest"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

type owner struct {
	calltest.Owner
	l Linker
}

func (o owner) Linker() Linker { return o.l }

type linker struct{ done chan struct{} }

func (l linker) SignInLink(server, id string) (string, <-chan struct{}, error) {
	return "https://hub.example/signin/" + id, l.done, nil
}

// A hop that needs no sign-in passes as it is; one that does is answered
// with the link when the client declines, and sent again once the caller
// signed in when it accepts; an owner no face can send to sign in is told
// so.
func TestStageSignsIn(t *testing.T) {
	need := &upstream.SignInRequired{Server: "g/s", User: "u"}
	sends := 0
	next := call.HopFunc(func(ctx context.Context, h *call.Hop) (json.RawMessage, upstream.ConnID, error) {
		if sends++; sends == 1 {
			return nil, 0, need
		}
		return json.RawMessage(`{}`), 3, nil
	})
	l := linker{done: make(chan struct{})}
	close(l.done)
	accept := Stage{Ask: func(ctx context.Context, e routes.ServerRequest) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept"}`), nil
	}}
	if res, conn, err := accept.Hop(t.Context(), &call.Hop{Owner: owner{l: l}, Timeout: 1 << 40}, next); err != nil || conn != 3 || string(res) != `{}` {
		t.Fatalf("accepted: %s on %d, %v", res, conn, err)
	}
	sends = 0
	decline := Stage{Ask: func(ctx context.Context, e routes.ServerRequest) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"decline"}`), nil
	}}
	if _, _, err := decline.Hop(t.Context(), &call.Hop{Owner: owner{l: l}, Timeout: 1 << 40}, next); err == nil || !strings.Contains(err.Error(), "https://hub.example/signin/") {
		t.Fatalf("declined: %v", err)
	}
	sends = 0
	if _, _, err := decline.Hop(t.Context(), &call.Hop{Owner: nil, Timeout: 1 << 40}, next); err == nil || !strings.Contains(err.Error(), "cannot be sent to sign in") {
		t.Fatalf("no face: %v", err)
	}
	other := errors.New("down")
	failing := call.HopFunc(func(ctx context.Context, h *call.Hop) (json.RawMessage, upstream.ConnID, error) { return nil, 0, other })
	if _, _, err := decline.Hop(t.Context(), &call.Hop{}, failing); err != other {
		t.Fatalf("another error: %v", err)
	}
}
