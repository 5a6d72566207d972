package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A client session holds at most MaxSessionSubscriptions resource
// subscriptions, each to a URI of at most MaxSubscriptionURI bytes: what
// it keeps in the hub is bounded (and so is Remove's walk).
const (
	MaxSessionSubscriptions = 1000
	MaxSubscriptionURI      = 8 << 10
)

// subscription is one resource URI that client sessions listen to, and
// what its upstream was told of it. The subscribes and unsubscribes sent
// upstream for one URI go one at a time, each once the one before it is
// answered: sent from different goroutines they could pass each other on
// the way (a background unsubscribe overtaken by a new session's
// subscribe leaves that session listening to a URI the upstream
// forgot). Whoever changes the set of sessions while nothing is on its
// way sends what the set needs (next); a session that subscribes while
// something is on its way waits for its answer, and then sends the
// subscribe itself if the upstream does not hold it. So once nothing is
// on its way, the upstream holds the URI exactly when a session listens.
type subscription[S Keyed] struct {
	owner    *upstream.Server // the server subscribed to
	sessions map[S]bool
	upstream holding // what the last subscribe or unsubscribe answered left
	// sending is closed when the subscribe or unsubscribe on its way
	// upstream is answered; nil when none is.
	sending chan struct{}
}

// holding is what the upstream holds of a URI, as far as the table knows.
type holding uint8

const (
	notHeld holding = iota
	// mayHold: a subscribe failed without an answer, and may have reached
	// the upstream all the same (cancelled with its session, or its call
	// timed out): a session that listens subscribes again, and with none
	// left an unsubscribe goes. A subscribe refused (a JSON-RPC error)
	// leaves notHeld: no unsubscribe follows a refusal.
	mayHold
	held
)

// Subscriber is a client's request that subscribes its session to
// resources (resources/subscribe, or a listen's resourceSubscriptions),
// as the hub hands it to the table.
type Subscriber[S Keyed] struct {
	Session S
	// Resolve is the server that lists uri or has a template for it in
	// the request's view, and whether that view hides uri. With wait, it
	// first waits (within the request) for such a server: the first
	// subscription may come before the upstream that owns the URI is up,
	// as a first read may.
	Resolve func(ctx context.Context, uri string, wait bool) (s *upstream.Server, hidden bool)
	// Routed records, for observers, that the request went to s for uri.
	Routed func(s *upstream.Server, uri string)
	// Subscribe sends resources/subscribe for uri to s, within the
	// request's timeout for s.
	Subscribe func(ctx context.Context, s *upstream.Server, uri string) error
}

// Subscribe answers resources/subscribe (on) or resources/unsubscribe
// with params: it subscribes the session to a resource, subscribing the
// owning upstream when the session is the first to listen.
func (t *Table[S]) Subscribe(ctx context.Context, sub Subscriber[S], params json.RawMessage, on bool) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: a uri is required")
	}
	if err := t.SubscribeURI(ctx, sub, p.URI, on); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

// SubscribeURI subscribes sub's session to one resource URI, or
// unsubscribes it (on false), as resources/subscribe does and a
// subscriptions/listen's resourceSubscriptions do. A subscribe returns
// once the upstream holds the URI (or refused it: the session then does
// not listen).
func (t *Table[S]) SubscribeURI(ctx context.Context, sub Subscriber[S], uri string, on bool) error {
	sess := sub.Session
	if on && len(uri) > MaxSubscriptionURI {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: a uri of more than %d bytes", MaxSubscriptionURI))
	}
	s := t.owner(ctx, sub, uri, on)
	if s == nil || resultcap.IsURI(uri) { // a kept result never changes: nothing to watch (server/resultcap)
		return &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": clip.Echo(uri)}}
	}
	sub.Routed(s, uri)
	t.mu.Lock()
	sent := t.subs[uri]
	if !on {
		unsubscribe := sent != nil && sent.sessions[sess] && t.leave(uri, sent, sess)
		t.mu.Unlock()
		if unsubscribe {
			t.sendUnsubscribe(uri, sent)
		}
		return nil
	}
	if sent == nil || !sent.sessions[sess] {
		if sess.Routing().subscriptions >= MaxSessionSubscriptions {
			t.mu.Unlock()
			return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("a session may hold %d subscriptions: unsubscribe from one first", MaxSessionSubscriptions))
		}
		if sent == nil {
			sent = &subscription[S]{owner: s, sessions: map[S]bool{}}
			t.subs[uri] = sent
		}
		sess.Routing().subscriptions++
		sent.sessions[sess] = true
	}
	return t.await(ctx, sub, uri, sent)
}

// await returns once the upstream holds sent's URI for sub's session,
// sending the subscribe itself when nothing else is on its way; t.mu is
// held, and released.
func (t *Table[S]) await(ctx context.Context, sub Subscriber[S], uri string, sent *subscription[S]) error {
	sess := sub.Session
	for {
		switch {
		case !sent.sessions[sess]: // gone meanwhile: its session ended, or the view hides uri now
			t.mu.Unlock()
			return nil
		case sent.sending != nil:
			answered := sent.sending
			t.mu.Unlock()
			select {
			case <-answered:
			case <-ctx.Done():
				t.mu.Lock()
				unsubscribe := sent.sessions[sess] && t.leave(uri, sent, sess)
				t.mu.Unlock()
				if unsubscribe {
					t.unsubscribeGone(map[string]*subscription[S]{uri: sent})
				}
				return ctx.Err()
			}
			t.mu.Lock()
		case sent.upstream == held:
			t.mu.Unlock()
			return nil
		default:
			// Every session listening shares the subscription, so it lives
			// on the server's shared connection (as its unsubscribe
			// does), not on this session's own (isolation: per-session),
			// which ends with it.
			sent.sending = make(chan struct{})
			t.mu.Unlock()
			err := sub.Subscribe(ctx, sent.owner, uri)
			t.mu.Lock()
			state := held
			if err != nil {
				state = mayHold
				if _, refused := errors.AsType[*jsonrpc.Error](err); refused {
					state = notHeld // an answer: the upstream (or the hub's chain) refused it, and holds nothing
				}
				if sent.sessions[sess] { // refused: the session does not listen
					t.drop(sent, sess)
				}
			}
			unsubscribe := t.answered(uri, sent, state)
			t.mu.Unlock()
			if unsubscribe { // every session went while it was on its way, or it failed
				t.unsubscribeGone(map[string]*subscription[S]{uri: sent})
			}
			return err
		}
	}
}

// drop takes sess out of sent's sessions; t.mu is held.
func (t *Table[S]) drop(sent *subscription[S], sess S) {
	delete(sent.sessions, sess)
	sess.Routing().subscriptions--
}

// leave is drop, then next: true when the caller is to send the
// unsubscribe the URI now needs.
func (t *Table[S]) leave(uri string, sent *subscription[S], sess S) bool {
	t.drop(sent, sess)
	return t.next(uri, sent)
}

// next is what sent's URI needs sent upstream, decided with t.mu held:
// nothing while something is on its way (its answer decides, answered)
// or while a session listens (one waiting for a subscribe sends it); with
// no session left, an unsubscribe when the upstream may hold the URI,
// claimed for the caller, who sends it (true); else the URI is
// forgotten.
func (t *Table[S]) next(uri string, sent *subscription[S]) bool {
	switch {
	case sent.sending != nil || len(sent.sessions) > 0:
		return false
	case sent.upstream == notHeld:
		if t.subs[uri] == sent {
			delete(t.subs, uri)
		}
		return false
	}
	sent.sending = make(chan struct{})
	return true
}

// answered records what the upstream holds once what was on its way for
// sent's URI is answered, wakes the sessions waiting for it, and is next;
// t.mu is held.
func (t *Table[S]) answered(uri string, sent *subscription[S], state holding) bool {
	sent.upstream = state
	close(sent.sending)
	sent.sending = nil
	return t.next(uri, sent)
}

// sendUnsubscribe sends the unsubscribe next claimed for sent's URI, and
// records its answer (whatever it is: the upstream holds nothing the
// table knows of). When a session listens again by the time it is to go
// (it waited behind other unsubscribes of a session that ended), it is
// not sent: the upstream keeps what it holds, and the session waiting
// need not wait for an upstream's answer it has no use for.
func (t *Table[S]) sendUnsubscribe(uri string, sent *subscription[S]) {
	t.mu.Lock()
	if len(sent.sessions) > 0 {
		t.answered(uri, sent, sent.upstream) // false: a session listens
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.unsubscribe(sent.owner, uri)
	t.mu.Lock()
	t.answered(uri, sent, notHeld) // false: an upstream that holds nothing needs no unsubscribe
	t.mu.Unlock()
}

// owner is the server to subscribe to uri at: the one that lists it or
// has a template for it, else the only server that supports
// subscriptions at all (a URI need not be listed to be watched).
//
// A URI the view hides has no owner, so subscribing to it is answered as
// for a URI that does not exist and nothing is forwarded.
func (t *Table[S]) owner(ctx context.Context, sub Subscriber[S], uri string, wait bool) *upstream.Server {
	s, hidden := sub.Resolve(ctx, uri, wait)
	if s != nil {
		return s
	}
	if hidden {
		return nil
	}
	t.mu.Lock()
	held := t.subs[uri]
	t.mu.Unlock()
	if held != nil {
		return held.owner
	}
	var only *upstream.Server
	var hides bool
	for _, g := range t.opts.Manager.Groups() {
		for _, s := range g.Servers {
			if res := s.Capabilities().Resources; res != nil && res.Subscribe {
				if only != nil {
					return nil
				}
				only, hides = s, g.Config.Resources.Hides(uri)
			}
		}
	}
	if hides {
		return nil
	}
	return only
}

// Unsubscribe ends sess's subscriptions to uris (those a listen of it
// named that no other listen of it names), and unsubscribes the
// upstreams where no session is left listening, in the background (see
// unsubscribeGone): a listen's end never waits for an upstream.
func (t *Table[S]) Unsubscribe(sess S, uris []string) {
	gone := map[string]*subscription[S]{}
	t.mu.Lock()
	for _, uri := range uris {
		if sent := t.subs[uri]; sent != nil && sent.sessions[sess] && t.leave(uri, sent, sess) {
			gone[uri] = sent
		}
	}
	t.mu.Unlock()
	t.unsubscribeGone(gone)
}

// UnsubscribeHidden ends the subscriptions to URIs that hides says are
// hidden now (a reload denied them): no client hears of them again, and
// their upstreams are unsubscribed.
func (t *Table[S]) UnsubscribeHidden(hides func(uri string) bool) {
	gone := map[string]*subscription[S]{}
	t.mu.Lock()
	for uri, sent := range t.subs {
		if !hides(uri) {
			continue
		}
		for sess := range sent.sessions {
			t.drop(sent, sess)
		}
		if t.next(uri, sent) {
			gone[uri] = sent
		}
	}
	t.mu.Unlock()
	t.unsubscribeGone(gone) // off the event loop: it waits for the upstream
}

// Subscribed reports whether any session listens to uri.
func (t *Table[S]) Subscribed(uri string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	sent := t.subs[uri]
	return sent != nil && len(sent.sessions) > 0
}

// Subscriptions is how many resource URIs sessions listen to.
func (t *Table[S]) Subscriptions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, sent := range t.subs {
		if len(sent.sessions) > 0 {
			n++
		}
	}
	return n
}

func (t *Table[S]) unsubscribe(s *upstream.Server, uri string) {
	if s == nil {
		return
	}
	if err := t.opts.Unsubscribe(s, uri); err != nil {
		t.opts.Logger.Debug("unsubscribe upstream", "upstream", s.Config.ID(), "uri", clip.Echo(uri), "err", err)
	}
}
