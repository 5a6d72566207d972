package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

type progressRoute[S Session] struct {
	sess   S
	server call.Upstream   // the call's: only its progress is the call's
	ctx    context.Context // the call's, so progress goes down its stream
	token  json.RawMessage // as the client sent it
	// user is the user whose own connection the call goes on (auth:
	// per-user), "" for none: only progress from that connection is the
	// call's (see upstream.Event.User).
	user string
}

// Progress is the session table's stage of the call chain: a call whose
// _meta has a progress token goes upstream with a token of the hub's own
// (Call.Meta), so that progress from upstream reaches the call's session
// (an S, which Session says) with the token its client chose, and two
// clients that chose the same token never see each other's progress. The
// table forgets the token when the call returns. Only the call's server's
// progress reaches the call (see Table.Notification).
type Progress[S Session] struct {
	Table *Table[S]
	// Session is the hub's session a call is made in, the zero S for one
	// that ended: given by the hub (the open session the call's owner
	// is, Table.Of), not asserted from Call.Owner.
	Session func(c *call.Call) S
}

// Handle maps c's progress token, if it has one, and passes c on.
func (p Progress[S]) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	meta := c.Params.Field("_meta")
	if len(meta) == 0 {
		return next.Handle(ctx, c)
	}
	m, err := jsonrpc.ScanObject(meta) // within the params the client sent: checked by Decode
	token := m.Field("progressToken")
	if err != nil || len(token) == 0 {
		return next.Handle(ctx, c)
	}
	tok, forget := p.Table.TrackProgress(ctx, p.Session(c), c.Upstream, bytes.Clone(token))
	defer forget()
	q, _ := jsonrpc.Marshal(tok)
	if out, err := m.With(jsonrpc.Member{Key: "progressToken", Value: q}); err == nil {
		c.Meta = out // the rest of _meta as the client sent it
	}
	return next.Handle(ctx, c)
}

// TrackProgress gives a call's progress token one of the hub's own,
// unique across sessions, and returns it with a func that forgets it. A
// call of a session that ended (the zero S) gets a token that routes
// nowhere: its progress is no one's.
func (t *Table[S]) TrackProgress(ctx context.Context, sess S, server call.Upstream, token json.RawMessage) (string, func()) {
	t.mu.Lock()
	t.nextTok++
	hubTok := fmt.Sprintf("dynamic-mcp-progress-%d", t.nextTok)
	var user string
	var zero S
	if server != nil && server.ServerConfig() != nil && server.ServerConfig().PerUser() && sess != zero {
		user = sess.UserKey()
	}
	if sess != zero {
		t.progress[hubTok] = progressRoute[S]{sess: sess, server: server, ctx: ctx, token: token, user: user}
	}
	t.mu.Unlock()
	return hubTok, func() {
		t.mu.Lock()
		delete(t.progress, hubTok)
		t.mu.Unlock()
	}
}

// Progress is the calls in flight that asked for progress: the session
// of each, by the hub's token.
func (t *Table[S]) Progress() map[string]S {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]S, len(t.progress))
	for tok, r := range t.progress {
		out[tok] = r.sess
	}
	return out
}

// progressOf is the call a progress notification of s's is for, which its
// token says; ok is false when no call to s in flight has it. The hub's
// tokens are counted, so guessed: another server's progress with one is
// not the call's.
func (t *Table[S]) progressOf(s *upstream.Server, params jsonrpc.Object) (tok string, route progressRoute[S], ok bool) {
	if json.Unmarshal(params.Field("progressToken"), &tok) != nil {
		return "", progressRoute[S]{}, false
	}
	t.mu.Lock()
	route, ok = t.progress[tok]
	t.mu.Unlock()
	if ok && route.server != s {
		return tok, progressRoute[S]{}, false
	}
	return tok, route, ok
}
