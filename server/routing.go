package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// routes is what the hub needs to send what upstreams say back to the
// right client session.
type routes struct {
	mu       sync.Mutex               // guards the maps
	sessions map[string]*session      // by id
	progress map[string]progressRoute // hub progress token -> the call's session
	subs     map[string]*subscription // by resource URI
	nextTok  uint64
	// droppedGone counts the notifications dropped for sessions that
	// ended, so that the hub's total never goes down (see Hub.Dropped).
	droppedGone uint64
}

// A client session holds at most maxSessionSubscriptions resource
// subscriptions, each to a URI of at most maxSubscriptionURI bytes: what
// it keeps in the hub is bounded (and so is removeSession's walk).
const (
	maxSessionSubscriptions = 1000
	maxSubscriptionURI      = 8 << 10
)

// subscription is one resource URI that client sessions listen to.
type subscription struct {
	owner    *upstream.Server // the server subscribed to
	sessions map[*session]bool
}

type progressRoute struct {
	sess   *session
	server *upstream.Server // the call's: only its progress is the call's
	ctx    context.Context  // the call's, so progress goes down its stream
	token  json.RawMessage  // as the client sent it
}

func newRoutes() *routes {
	return &routes{
		sessions: map[string]*session{},
		progress: map[string]progressRoute{},
		subs:     map[string]*subscription{},
	}
}

// errSessionExists refuses a session whose id an open session has.
var errSessionExists = errors.New("session already exists")

// addSession registers a new client session with the hub.
func (h *Hub) addSession(sess *session) error {
	h.routes.mu.Lock()
	defer h.routes.mu.Unlock()
	if _, ok := h.routes.sessions[sess.id]; ok {
		return fmt.Errorf("register session: %w", errSessionExists)
	}
	h.routes.sessions[sess.id] = sess
	return nil
}

// removeSession forgets a session that ended: its subscriptions go (and
// upstreams are unsubscribed where no one else listens), the hub's
// requests waiting on it fail, its requests in flight are cancelled.
func (h *Hub) removeSession(sess *session) {
	sess.end()
	r := h.routes
	r.mu.Lock()
	delete(r.sessions, sess.id)
	r.droppedGone += sess.peer.Dropped()
	owners := map[string]*upstream.Server{} // of the URIs no one listens to now
	for uri, sub := range r.subs {
		if sub.sessions[sess] {
			delete(sub.sessions, sess)
			if len(sub.sessions) == 0 {
				owners[uri] = sub.owner
				delete(r.subs, uri)
			}
		}
	}
	r.mu.Unlock()
	h.unsubscribeGone(owners)
	h.tasks.ForgetSession(sess)
	h.mgr.Release(sess) // its own connections (isolation: per-session)
	h.rates.ForgetSession(sess.id)
	if !sessionless(sess) { // a credential's grants outlive each of its requests
		h.inbox.EndSession(caller(sess))
	}
}

// unsubscribe ends sess's subscriptions to uris (a listen of its ended),
// and returns the servers of the URIs no session listens to now, to
// unsubscribe (see unsubscribeGone).
func (r *routes) unsubscribe(sess *session, uris []string) map[string]*upstream.Server {
	owners := map[string]*upstream.Server{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uri := range uris {
		sub := r.subs[uri]
		if sub == nil || !sub.sessions[sess] {
			continue
		}
		delete(sub.sessions, sess)
		sess.subscriptions--
		if len(sub.sessions) == 0 {
			owners[uri] = sub.owner
			delete(r.subs, uri)
		}
	}
	return owners
}

func (h *Hub) sessionList() []*session {
	h.routes.mu.Lock()
	defer h.routes.mu.Unlock()
	out := make([]*session, 0, len(h.routes.sessions))
	for _, s := range h.routes.sessions {
		out = append(out, s)
	}
	return out
}

// sessionFor is the client session a request from upstream belongs to: the
// one whose call it came during or whose own connection it came on
// (isolation: per-session), both of which the upstream package knows as
// the owner the call was made for (upstream.Event.Owner), else the only
// client there is.
func (h *Hub) sessionFor(owner any) *session {
	if s, ok := owner.(*session); ok {
		return s
	}
	if list := h.sessionList(); len(list) == 1 {
		return list[0]
	}
	return nil
}

// trackProgress gives a call's progress token one of the hub's own, unique
// across sessions, and returns it with a func that forgets it.
func (h *Hub) trackProgress(ctx context.Context, sess *session, server *upstream.Server, token json.RawMessage) (string, func()) {
	r := h.routes
	r.mu.Lock()
	r.nextTok++
	hubTok := fmt.Sprintf("dynamic-mcp-progress-%d", r.nextTok)
	r.progress[hubTok] = progressRoute{sess: sess, server: server, ctx: ctx, token: token}
	r.mu.Unlock()
	return hubTok, func() {
		r.mu.Lock()
		delete(r.progress, hubTok)
		r.mu.Unlock()
	}
}

// progressOf is the call a progress notification of s's is for, which its
// token says; ok is false when no call to s in flight has it. The hub's
// tokens are counted, so guessed: another server's progress with one is
// not the call's.
func (h *Hub) progressOf(s *upstream.Server, params jsonrpc.Object) (tok string, route progressRoute, ok bool) {
	if json.Unmarshal(params.Field("progressToken"), &tok) != nil {
		return "", progressRoute{}, false
	}
	h.routes.mu.Lock()
	route, ok = h.routes.progress[tok]
	h.routes.mu.Unlock()
	if ok && route.server != s {
		return tok, progressRoute{}, false
	}
	return tok, route, ok
}

// upstreamNotification routes a notification from an upstream server to
// the clients it is for. Its params pass through byte for byte but for
// the member the hub must change (the progress token, the logger's name)
// and a secret's value.
// It runs on the hub's event loop: sess.notify never blocks.
func (h *Hub) upstreamNotification(e upstream.Event) {
	ctx, s, method, params := e.Context, e.Server, e.Method, e.Params
	owner, _ := e.Owner.(*session)
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	// A resolved ${secret:NAME} a server logs or reports (a log message,
	// a progress message) goes no further, as in its answers (observe.go).
	params = h.snapshot().cfg.RedactSecrets(params)
	// Checked JSON since it arrived (its connection decoded it): scanned
	// once, its members read and replaced without validating it again.
	fields, _ := jsonrpc.ScanObject(params) // the zero Object when no object: With refuses it
	var (
		tok   string
		route progressRoute
		known bool // a progress notification for a call in flight
	)
	if method == "notifications/progress" {
		tok, route, known = h.progressOf(s, fields)
		if owner != nil && known && owner != route.sess {
			// It came on another session's own connection, or in the
			// answer to another session's call: not this call's.
			known = false
		}
	}
	if obs := h.observer(); obs != nil {
		m := &traffic.Message{Direction: traffic.FromUpstream, Server: s.Config.ID(), Method: method, Params: params}
		octx, osess := ctx, h.sessionFor(e.Owner)
		if known {
			// Under its call even where the transport cannot tell which
			// call a notification came during (stdio).
			octx, osess = route.ctx, route.sess
		}
		if osess != nil {
			m.Session = osess.id
		}
		obs.Message(octx, m)
	}
	switch method {
	case "notifications/progress":
		if !known {
			h.logger.Debug("progress for no call in flight", "upstream", s.Config.ID(), "token", tok)
			return
		}
		p, err := fields.With(jsonrpc.Member{Key: "progressToken", Value: route.token})
		if err != nil {
			h.logger.Debug("progress with params that are no object", "upstream", s.Config.ID(), "err", err)
			return
		}
		route.sess.notify(route.ctx, method, p)
	case "notifications/message":
		var level mcp.LoggingLevel
		_ = json.Unmarshal(fields.Field("level"), &level)
		logger, _ := stringValue(fields.Field("logger"))
		name := s.Config.ID()
		if logger != "" {
			name += "/" + logger
		}
		quoted, _ := jsonrpc.Marshal(name)
		p, err := fields.With(jsonrpc.Member{Key: "logger", Value: quoted})
		if err != nil {
			h.logger.Debug("log message with params that are no object", "upstream", s.Config.ID(), "err", err)
			return
		}
		// Every session gets one from a shared connection; the session whose call it came during
		// (the only one with calls in flight on its connection, see
		// upstream's callContext) gets it under that call, so that over
		// HTTP it travels on the call's stream, before the answer, as
		// from the server itself.
		// One that came on a session's own connection (isolation:
		// per-session) is that session's alone.
		own := e.OwnConn
		for _, sess := range h.sessionList() {
			if own && sess != owner {
				continue
			}
			if allows(sess.GetLogLevel(), level) {
				nctx := context.Background()
				if sess == owner {
					nctx = ctx
				}
				sess.notify(nctx, method, p)
			}
		}
	case "notifications/tasks/status":
		if owner, p, ok := h.tasks.Status(s, upstream.ConnOf(ctx), params); ok {
			owner.notify(context.Background(), method, p)
		}
	case "notifications/resources/updated":
		uri, _ := stringValue(fields.Field("uri"))
		if h.snapshot().view.HidesResource(uri) {
			h.logger.Debug("update of a hidden resource not passed on", "upstream", s.Config.ID(), "uri", uri)
			return
		}
		h.routes.mu.Lock()
		var subs []*session
		if sub := h.routes.subs[uri]; sub != nil && sub.owner.Config.ID() == s.Config.ID() {
			for sess := range sub.sessions {
				subs = append(subs, sess)
			}
		}
		h.routes.mu.Unlock()
		for _, sess := range subs {
			if !sess.lists.Modern() {
				sess.notify(context.Background(), method, params)
			}
			sess.lists.Updated(uri, params)
		}
	default:
		h.logger.Debug("upstream notification not passed on", "upstream", s.Config.ID(), "method", method)
	}
}

// upstreamRequest passes a request from an upstream server (sampling,
// elicitation, roots) to the client whose call caused it (e.Owner), where
// that client declared it can answer, and returns the client's answer.
// ctx carries the upstream's deadline (e.Context is not read); params are
// nil when the upstream sent none, and then the client gets none either
// (never "params": null).
func (h *Hub) upstreamRequest(ctx context.Context, e upstream.Event) (res json.RawMessage, err error) {
	s, method, params := e.Server, e.Method, e.Params
	// A resolved ${secret:NAME} a server asks the client about (a sampling
	// prompt, an elicitation's message) goes no further, as in its
	// answers (observe.go) and notifications.
	if params != nil {
		params = h.snapshot().cfg.RedactSecrets(params)
	}
	sess := h.sessionFor(e.Owner)
	noClient := false // the hub answers for the client (see traffic.StatusNoClient)
	if obs := h.observer(); obs != nil {
		m := &traffic.Message{Direction: traffic.FromUpstream, Server: s.Config.ID(), Method: method, Params: params, Request: true}
		if sess != nil {
			m.Session = sess.id
		}
		start := time.Now()
		defer func() {
			m.Result, m.Err, m.Duration, m.NoClient = res, err, time.Since(start), noClient
			obs.Message(ctx, m)
		}()
	}
	if p := inputCallOf(ctx); p != nil {
		// During a 2026-07-28 client's call: asked in its next round.
		return p.ask(ctx, method, params)
	}
	if e.Ambiguous {
		h.logger.Warn("upstream request passed to no client: calls of several clients are in flight to it", "upstream", s.Config.ID(), "method", method)
		return nil, &upstream.RPCError{Code: codeInvalidRequest, Message: "dynamic-mcp: calls of several clients are in flight to this server, and " + method + " does not say which it belongs to; it is passed to none of them"}
	}
	if sess == nil {
		noClient = true
		return nil, &upstream.RPCError{Code: codeInvalidRequest, Message: "dynamic-mcp: no client session to pass " + method + " to"}
	}
	caps := sess.GetClientCapabilities()
	var able bool
	what := method
	switch method {
	case "sampling/createMessage":
		able = caps.Sampling != nil
	case "elicitation/create":
		mode := elicitationMode(params)
		able = canElicit(caps.Elicitation, mode)
		if mode == "url" {
			what += " in URL mode"
		}
	case "roots/list":
		able = caps.Roots != nil
	}
	if !able {
		noClient = true
		return nil, &upstream.RPCError{Code: codeMethodNotFound, Message: "dynamic-mcp: the client does not support " + what}
	}
	return sess.request(ctx, method, params) // a client's error is already the upstream's RPCError type
}

// canElicit reports whether a client that declared e can answer an
// elicitation in mode ("" is form). What the upstream was told may not
// be what this client states (a shared connection declares for every
// client, and a 2026-07-28 client states its capabilities anew in each
// request); a client that declared elicitation without naming a mode
// answers forms only (basic/elicitation, "Capabilities").
func canElicit(e *mcp.ElicitationCapability, mode string) bool {
	switch {
	case e == nil:
		return false
	case mode == "url":
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil
}

// elicitationMode is the mode an elicitation/create asks in, "" when it
// names none (form).
func elicitationMode(params json.RawMessage) string {
	p, err := jsonrpc.ScanObject(params)
	if err != nil {
		return ""
	}
	mode, _ := stringValue(p.Field("mode"))
	return mode
}

// subscribe subscribes sess to a resource, subscribing the owning upstream
// when sess is the first to listen.
func (h *Hub) subscribe(ctx context.Context, req *request, v *view, on bool) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(req.msg.Params, &p) != nil || p.URI == "" {
		return nil, errorf(codeInvalidParams, "invalid params: a uri is required")
	}
	if err := h.subscribeURI(ctx, req, v, p.URI, on); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

// subscribeURI subscribes req's session to one resource URI, or
// unsubscribes it (on false), as resources/subscribe does and a
// subscriptions/listen's resourceSubscriptions do.
func (h *Hub) subscribeURI(ctx context.Context, req *request, v *view, uri string, on bool) error {
	sess := req.sess
	if on && len(uri) > maxSubscriptionURI {
		return errorf(codeInvalidParams, fmt.Sprintf("invalid params: a uri of more than %d bytes", maxSubscriptionURI))
	}
	if on {
		// The first subscription may come before the upstream that owns
		// the URI is up, as a first read may.
		v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.ResolveResource(uri) != nil })
	}
	s := h.subscriptionOwner(v, uri)
	if s == nil || isResultURI(uri) { // a kept result never changes: nothing to watch (resultread.go)
		return &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	}
	h.routed(req, s, uri, "", "")
	r := h.routes
	r.mu.Lock()
	sub := r.subs[uri]
	first := sub == nil
	if on {
		if first || !sub.sessions[sess] {
			if sess.subscriptions >= maxSessionSubscriptions {
				r.mu.Unlock()
				return errorf(codeInvalidRequest, fmt.Sprintf("a session may hold %d subscriptions: unsubscribe from one first", maxSessionSubscriptions))
			}
			sess.subscriptions++
		}
		if first {
			sub = &subscription{owner: s, sessions: map[*session]bool{}}
			r.subs[uri] = sub
		}
		sub.sessions[sess] = true
	} else if !first && sub.sessions[sess] {
		sess.subscriptions--
		delete(sub.sessions, sess)
		if len(sub.sessions) == 0 {
			delete(r.subs, uri)
		}
	}
	last := r.subs[uri] == nil
	r.mu.Unlock()
	switch {
	case on && first:
		// Every session listening shares the subscription, so it lives on
		// the server's shared connection (as its unsubscribe does), not on
		// this session's own (isolation: per-session), which ends with it.
		if _, err := h.request(ctx, req, nil, s, "resources/subscribe", map[string]string{"uri": uri}, req.snap.cfg.CallTimeoutFor(s.Config)); err != nil {
			r.mu.Lock() // the upstream refused: forget the subscription
			if r.subs[uri] == sub {
				for other := range sub.sessions {
					other.subscriptions--
				}
				delete(r.subs, uri)
			}
			r.mu.Unlock()
			return err
		}
	case !on && last && !first:
		h.upstreamUnsubscribe(s, uri)
	}
	return nil
}

// subscriptionOwner is the server to subscribe to uri at: the one that
// lists it or has a template for it, else the only server that supports
// subscriptions at all (a URI need not be listed to be watched).
//
// A URI the view hides has no owner, so subscribing to it is answered as
// for a URI that does not exist and nothing is forwarded.
func (h *Hub) subscriptionOwner(v *view, uri string) *upstream.Server {
	if s := v.ResolveResource(uri); s != nil {
		return s
	}
	if v.HidesResource(uri) {
		return nil
	}
	h.routes.mu.Lock()
	sub := h.routes.subs[uri]
	h.routes.mu.Unlock()
	if sub != nil {
		return sub.owner
	}
	var only *upstream.Server
	var hides bool
	for _, g := range h.mgr.Groups() {
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

// unsubscribeHidden ends the subscriptions to URIs that v hides (a reload
// denied them): no client hears of them again, and their upstreams are
// unsubscribed.
func (h *Hub) unsubscribeHidden(v *view) {
	owners := map[string]*upstream.Server{}
	h.routes.mu.Lock()
	for uri, sub := range h.routes.subs {
		if v.HidesResource(uri) {
			owners[uri] = sub.owner
			for sess := range sub.sessions {
				sess.subscriptions--
			}
			delete(h.routes.subs, uri)
		}
	}
	h.routes.mu.Unlock()
	for uri, s := range owners {
		h.spawn(func() { h.upstreamUnsubscribe(s, uri) }) // off the event loop: it waits for the upstream
	}
}

func (h *Hub) upstreamUnsubscribe(s *upstream.Server, uri string) {
	if s == nil {
		return
	}
	timeout := h.config().Settings.ListTimeout
	if _, err := h.request(h.ctx, nil, nil, s, "resources/unsubscribe", map[string]string{"uri": uri}, timeout); err != nil {
		h.logger.Debug("unsubscribe upstream", "upstream", s.Config.ID(), "uri", uri, "err", err)
	}
}

// levels orders MCP's log levels (RFC 5424's, least severe first).
var levels = map[mcp.LoggingLevel]int{
	mcp.LoggingLevelDebug: 0, mcp.LoggingLevelInfo: 1, mcp.LoggingLevelNotice: 2, mcp.LoggingLevelWarning: 3,
	mcp.LoggingLevelError: 4, mcp.LoggingLevelCritical: 5, mcp.LoggingLevelAlert: 6, mcp.LoggingLevelEmergency: 7,
}

// allows reports whether a client that set min wants a message at level.
func allows(min, level mcp.LoggingLevel) bool { return levels[level] >= levels[min] }

// setLogLevel asks upstreams to log at the most verbose level any client
// asked for; each client then gets only what its own level allows.
func (h *Hub) setLogLevel() {
	var min mcp.LoggingLevel = mcp.LoggingLevelEmergency
	for _, sess := range h.sessionList() {
		if l := sess.GetLogLevel(); levels[l] < levels[min] {
			min = l
		}
	}
	h.mgr.SetLogLevel(min)
}
