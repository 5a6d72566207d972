package routes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
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

// subscription is one resource URI that client sessions listen to.
type subscription[S Session] struct {
	owner    *upstream.Server // the server subscribed to
	sessions map[S]bool
	// sending: the first subscribe is on its way upstream. The
	// subscription is kept while it is, even with no session left, and
	// its answer decides (SubscribeURI): an unsubscribe sent meanwhile
	// could reach the upstream before the subscribe and leave it
	// subscribed with nobody listening.
	sending bool
}

// unheld reports whether the subscription may go: no session listens and
// no subscribe is on its way upstream. t.mu is held.
func (held *subscription[S]) unheld() bool { return len(held.sessions) == 0 && !held.sending }

// Subscriber is a client's request that subscribes its session to
// resources (resources/subscribe, or a listen's resourceSubscriptions),
// as the hub hands it to the table.
type Subscriber[S Session] struct {
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
// subscriptions/listen's resourceSubscriptions do.
func (t *Table[S]) SubscribeURI(ctx context.Context, sub Subscriber[S], uri string, on bool) error {
	sess := sub.Session
	if on && len(uri) > MaxSubscriptionURI {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: a uri of more than %d bytes", MaxSubscriptionURI))
	}
	s := t.owner(ctx, sub, uri, on)
	if s == nil || resultcap.IsURI(uri) { // a kept result never changes: nothing to watch (server/resultcap)
		return &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	}
	sub.Routed(s, uri)
	t.mu.Lock()
	held := t.subs[uri]
	first := held == nil
	if on {
		if first || !held.sessions[sess] {
			if sess.Routing().subscriptions >= MaxSessionSubscriptions {
				t.mu.Unlock()
				return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("a session may hold %d subscriptions: unsubscribe from one first", MaxSessionSubscriptions))
			}
			sess.Routing().subscriptions++
		}
		if first {
			held = &subscription[S]{owner: s, sessions: map[S]bool{}, sending: true}
			t.subs[uri] = held
		}
		held.sessions[sess] = true
	} else if !first && held.sessions[sess] {
		sess.Routing().subscriptions--
		delete(held.sessions, sess)
		if held.unheld() {
			delete(t.subs, uri)
		}
	}
	last := t.subs[uri] == nil
	t.mu.Unlock()
	switch {
	case on && first:
		return t.sendSubscribe(ctx, sub, held, uri)
	case !on && last && !first:
		t.unsubscribe(s, uri)
	}
	return nil
}

// sendSubscribe sends the first subscribe to held's URI upstream, and
// acts on its answer: a refusal forgets the subscription; if every
// session listening went while it was on its way (Remove, Unsubscribe,
// UnsubscribeHidden leave it to this), the upstream is unsubscribed
// again, in the background, whatever the answer (a subscribe cancelled
// with its session may have reached the upstream all the same).
func (t *Table[S]) sendSubscribe(ctx context.Context, sub Subscriber[S], held *subscription[S], uri string) error {
	// Every session listening shares the subscription, so it lives on
	// the server's shared connection (as its unsubscribe does), not on
	// this session's own (isolation: per-session), which ends with it.
	err := sub.Subscribe(ctx, held.owner, uri)
	t.mu.Lock()
	held.sending = false
	gone := len(held.sessions) == 0
	if (err != nil || gone) && t.subs[uri] == held {
		for other := range held.sessions { // refused, or no one is left: forget it
			other.Routing().subscriptions--
		}
		delete(t.subs, uri)
	}
	t.mu.Unlock()
	if gone {
		t.unsubscribeGone(map[string]*upstream.Server{uri: held.owner})
	}
	return err
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
	owners := map[string]*upstream.Server{}
	t.mu.Lock()
	for _, uri := range uris {
		held := t.subs[uri]
		if held == nil || !held.sessions[sess] {
			continue
		}
		delete(held.sessions, sess)
		sess.Routing().subscriptions--
		if held.unheld() {
			owners[uri] = held.owner
			delete(t.subs, uri)
		}
	}
	t.mu.Unlock()
	t.unsubscribeGone(owners)
}

// UnsubscribeHidden ends the subscriptions to URIs that hides says are
// hidden now (a reload denied them): no client hears of them again, and
// their upstreams are unsubscribed.
func (t *Table[S]) UnsubscribeHidden(hides func(uri string) bool) {
	owners := map[string]*upstream.Server{}
	t.mu.Lock()
	for uri, held := range t.subs {
		if hides(uri) {
			for sess := range held.sessions {
				sess.Routing().subscriptions--
			}
			if held.sending {
				clear(held.sessions) // its answer unsubscribes (sendSubscribe)
				continue
			}
			owners[uri] = held.owner
			delete(t.subs, uri)
		}
	}
	t.mu.Unlock()
	for uri, s := range owners {
		t.opts.Spawn(func() { t.unsubscribe(s, uri) }) // off the event loop: it waits for the upstream
	}
}

// Subscribed reports whether any session listens to uri.
func (t *Table[S]) Subscribed(uri string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subs[uri] != nil
}

// Subscriptions is how many resource URIs sessions listen to.
func (t *Table[S]) Subscriptions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.subs)
}

func (t *Table[S]) unsubscribe(s *upstream.Server, uri string) {
	if s == nil {
		return
	}
	if err := t.opts.Unsubscribe(s, uri); err != nil {
		t.opts.Logger.Debug("unsubscribe upstream", "upstream", s.Config.ID(), "uri", uri, "err", err)
	}
}
