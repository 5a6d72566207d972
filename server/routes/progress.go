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

type progressRoute[S Keyed] struct {
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
type Progress[S Keyed] struct {
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

// progressOf is the call a progress notification e of s's is for, which
// its token says; ok is false when no call to s in flight has it, or it
// came where that call's progress cannot (carries). kept is true for one
// of a held call between its rounds (HoldProgress): kept, params and
// all, for the next round. The hub's tokens are counted, so guessed:
// another server's progress with one is not the call's.
func (t *Table[S]) progressOf(e upstream.Event, params jsonrpc.Object) (tok string, route progressRoute[S], ok, kept bool) {
	s := e.Server
	if json.Unmarshal(params.Field("progressToken"), &tok) != nil {
		return "", progressRoute[S]{}, false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	route, ok = t.progress[tok]
	if h := t.held[tok]; !ok && h != nil {
		if h.to == "" {
			if h.first.server == s && h.first.carries(e) && len(h.pending) < maxHeldProgress {
				h.pending = append(h.pending, bytes.Clone(params.Bytes()))
				return tok, progressRoute[S]{}, false, true
			}
			return tok, progressRoute[S]{}, false, false
		}
		route, ok = t.progress[h.to]
	}
	if ok && (route.server != s || !route.carries(e)) {
		return tok, progressRoute[S]{}, false, false
	}
	return tok, route, ok, false
}

// carries reports whether e may be progress of the call r routes: not if
// it came on another session's own connection, or in the answer to
// another session's call, or on a connection of another user's own
// (auth: per-user) than the call went on, or on none of the user's it
// did.
func (r progressRoute[S]) carries(e upstream.Event) bool {
	return !(ofSession(e) && e.Owner != upstream.Owner(r.sess)) && r.user == e.User
}

// maxHeldProgress bounds the progress notifications kept for a held call
// between its rounds; beyond it they are dropped.
const maxHeldProgress = 64

// heldProgress is the progress token of a call held across a 2026-07-28
// client's rounds (server/rounds): the hub token it went upstream with
// outlives the round that tracked it, and each later round is a request
// (over HTTP, a session) of its own.
type heldProgress[S Keyed] struct {
	first   progressRoute[S]  // the round that sent the call: whose server and owner its progress must be
	to      string            // the hub token of the round that carries it now, "" between rounds
	pending []json.RawMessage // the params of progress that came between rounds, oldest first
}

// HoldProgress keeps the hub token tok, of a call in flight that is held
// across rounds, known after the request that tracked it returns: its
// progress between rounds is kept, and carry(to), called as a later round
// (whose own hub token is to) resumes the call, passes what was kept and
// what comes until the func it returns is called to that round's
// request, as progress of that round's token. release forgets tok once
// the call has ended. A tok no call in flight has gives funcs that do
// nothing.
func (t *Table[S]) HoldProgress(tok string) (carry func(to string) (end func()), release func()) {
	nothing := func() {}
	t.mu.Lock()
	defer t.mu.Unlock()
	first, ok := t.progress[tok]
	if !ok {
		return func(string) func() { return nothing }, nothing
	}
	h := &heldProgress[S]{first: first}
	t.held[tok] = h
	carry = func(to string) func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		route, ok := t.progress[to]
		if !ok || route.server != first.server || t.held[tok] != h {
			return nothing
		}
		h.to = to
		// Under t.mu, so that what comes meanwhile (progressOf) follows
		// what was kept; Session.Notify never blocks.
		for _, params := range h.pending {
			fields, _ := jsonrpc.ScanObject(params)
			if p, err := fields.With(jsonrpc.Member{Key: "progressToken", Value: route.token}); err == nil {
				notify(route.ctx, route.sess, "notifications/progress", p)
			}
		}
		h.pending = nil
		return func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if h.to == to {
				h.to = ""
			}
		}
	}
	release = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.held[tok] == h {
			delete(t.held, tok)
		}
	}
	return carry, release
}
