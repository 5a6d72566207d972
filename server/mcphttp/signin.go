package mcphttp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
)

// Per-user sign-ins through the face (a server's auth: per-user): a call
// of a user who has not signed in to such a server is answered with a
// link the session mints (SignInLink): /auth/start?server=NAME&state=S,
// where S is unguessable, bound to the user and the server, good once and
// for signInTTL. /auth/start runs the server's OAuth discovery and
// registration and sends the browser to its authorization endpoint (PKCE,
// the resource parameter) with this face's /auth/callback as the
// redirect; the callback exchanges the code and keeps the token for that
// user alone. Both pages are behind the Origin and Host checks only (a
// browser navigates to them with no bearer token): the state is the
// credential.

const (
	signInTTL  = 10 * time.Minute
	maxSignIns = 256 // links and flows pending at once; the oldest go first
	// maxUserSignIns is one user's share: a user whose calls keep asking
	// pushes out their own oldest links, never another user's.
	maxUserSignIns = 8
)

// signInEntry is a pending link (flow nil) or a started flow.
type signInEntry struct {
	user, server, name string // name: how the user is shown
	expires            time.Time
	flow               *auth.WebFlow
	done               chan struct{} // closed once signed in
	hs                 *httpSession  // told when signed in, under elicitation
	elicitation        string
}

// signIns are the pending links and flows, bounded (STYLE 15).
type signIns struct {
	mu      sync.Mutex
	entries map[string]*signInEntry
}

// put keeps e under key (a random state), dropping the expired; beyond
// maxUserSignIns of e's user, that user's one closest to expiry; beyond
// maxSignIns, the one closest to expiry.
func (p *signIns) put(key string, e *signInEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.entries == nil {
		p.entries = map[string]*signInEntry{}
	}
	now := time.Now()
	var oldest, userOldest string
	users := 0
	for k, v := range p.entries {
		if now.After(v.expires) {
			delete(p.entries, k)
			continue
		}
		if oldest == "" || v.expires.Before(p.entries[oldest].expires) {
			oldest = k
		}
		if v.user == e.user {
			users++
			if userOldest == "" || v.expires.Before(p.entries[userOldest].expires) {
				userOldest = k
			}
		}
	}
	switch {
	case users >= maxUserSignIns:
		delete(p.entries, userOldest)
	case len(p.entries) >= maxSignIns && oldest != "":
		delete(p.entries, oldest)
	}
	p.entries[key] = e
}

// take removes and returns the live entry under key, of the kind asked
// (a flow or a link), or nil.
func (p *signIns) take(key string, flow bool) *signInEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || (e.flow != nil) != flow {
		return nil
	}
	delete(p.entries, key)
	if time.Now().After(e.expires) {
		return nil
	}
	return e
}

func newState() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SignInLink is a link for the session's caller to sign in to server
// (server.SignInLinker).
func (hs *httpSession) SignInLink(server, elicitation string) (string, <-chan struct{}, error) {
	if hs.who == nil || hs.who.Kind == identity.KindNone || hs.who.Subject == "" || hs.face == nil {
		return "", nil, errors.New("this session's caller has no identity")
	}
	user := hs.who.Key() // as the hub's session's UserKey
	state := newState()
	e := &signInEntry{user: user, server: server, name: hs.who.User(), expires: time.Now().Add(signInTTL), done: make(chan struct{}),
		hs: hs, elicitation: elicitation}
	hs.face.signIns.put(state, e)
	return hs.base + "/auth/start?server=" + url.QueryEscape(server) + "&state=" + state, e.done, nil
}

// publicBase is the face's URL as the client reached it: scheme and
// host of r (https behind a balancer that says so).
func publicBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// signInStart takes a link's state and sends the browser to the
// authorization server.
func (s *Server) signInStart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	e := s.signIns.take(q.Get("state"), false)
	if e == nil || e.server != q.Get("server") {
		http.Error(w, "dynamic-mcp: this sign-in link is unknown, used or expired: call the tool again for a new one", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	flow, err := s.hub.BeginUserSignIn(ctx, e.server, e.user, publicBase(r)+"/auth/callback")
	if err != nil {
		s.logger.Warn("per-user sign-in could not start", "server", e.server, "err", err)
		http.Error(w, "dynamic-mcp: the sign-in could not start: "+err.Error(), http.StatusBadGateway)
		return
	}
	e.flow, e.expires = flow, time.Now().Add(signInTTL)
	s.signIns.put(flow.State(), e)
	http.Redirect(w, r, flow.AuthURL, http.StatusFound)
}

// signInCallback takes the authorization server's redirect, exchanges the
// code and keeps the token for the user the flow was started for.
func (s *Server) signInCallback(w http.ResponseWriter, r *http.Request) {
	e := s.signIns.take(r.URL.Query().Get("state"), true)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if e == nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, "<p>dynamic-mcp: this sign-in is unknown, finished or expired: call the tool again for a new link.</p>\n")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	rec, err := e.flow.Finish(ctx, r.URL.Query())
	if err == nil {
		err = s.hub.SaveUserSignIn(e.user, rec)
	}
	if err != nil {
		s.logger.Warn("per-user sign-in failed", "server", e.server, "err", err)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<p>dynamic-mcp: the sign-in to %s failed: %s</p>\n", html.EscapeString(e.server), html.EscapeString(err.Error()))
		return
	}
	s.logger.Info("a caller signed in to a per-user server", "server", e.server, "user", e.name)
	close(e.done) // an entry is taken once, so closed once
	if b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
		"params": map[string]string{"elicitationId": e.elicitation}}); err == nil {
		e.hs.Notify(context.Background(), b) // on its GET stream, if open; else dropped
	}
	fmt.Fprintf(w, "<p>dynamic-mcp: %s is signed in to %s. You can close this window and call again.</p>\n", html.EscapeString(e.name), html.EscapeString(e.server))
}
