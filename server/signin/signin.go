// Package signin serves the per-user sign-in pages of the HTTP face
// (/auth/start, /auth/confirm, /auth/callback/SERVER) and mints the links
// that send a caller there; server/mcphttp mounts them.
package signin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Per-user sign-ins through the face (a server's auth: per-user): a call
// of a user who has not signed in to such a server is answered with a
// link the session mints (Pages.Link): /auth/start?server=NAME&state=S,
// where S is unguessable, bound to the user and the server, good once and
// for signInTTL. Opening it (GET) only shows a page naming the server and
// the user it signs in, with a button: link previewers of chat apps and
// mail scanners that fetch the link neither use it up nor start a
// sign-in. The button POSTs to /auth/start, which uses the link up and
// runs the server's OAuth discovery and registration and sends the
// browser to its authorization endpoint (PKCE, the resource parameter)
// with this face's /auth/callback as the redirect; the callback exchanges
// the code and keeps the token for that user alone. With
// http.auth.client_id, the link of a JWT caller first sends the browser
// to the hub's identity provider (confirm.go): the sign-in goes on only
// for the caller the link was made for. The pages are behind the Origin
// and Host checks only (a browser navigates to them with no bearer
// token): the state is the credential. Where the hub has a store, the
// pending states are kept there (shared.go), for any replica.

const (
	signInTTL  = 10 * time.Minute
	maxSignIns = 256 // links and flows pending at once; the oldest go first
	// maxUserSignIns is one user's share: a user whose calls keep asking
	// pushes out their own oldest links, never another user's.
	maxUserSignIns = 8
)

// UserSignIns are the sign-ins of each user to the servers with auth:
// per-user, and the store every replica shares (nil: none), where the
// pending ones are kept when the face seals; upstream.Manager implements
// them.
type UserSignIns interface {
	BeginUserSignIn(ctx context.Context, id, user, redirect string) (*auth.WebFlow, error)
	SaveUserSignIn(user string, rec *auth.Record) error
}

// Notifier is told when a sign-in its link asked for is done: the
// session of the call that asked (server.Peer's Notify).
type Notifier interface {
	Notify(ctx context.Context, msg []byte)
}

// Options configure the sign-in pages.
type Options struct {
	// SignIns run the per-user servers' sign-ins; nil: a caller cannot
	// be sent to sign in.
	SignIns UserSignIns
	// Store is the store every replica shares, nil for none.
	Store shared.Store
	// Keys are the face's session keys (32 bytes each; the first seals,
	// all open): with them and Store, the
	// pending states are kept there, sealed, for any replica
	// (shared.go). None: in this replica's memory.
	Keys [][]byte
	// Auth, with a client_id, confirms the link of a JWT caller at the
	// hub's identity provider (confirm.go).
	Auth *config.HTTPAuth
	// BodyTimeout bounds reading the form of /auth/start.
	BodyTimeout time.Duration
	Logger      *slog.Logger
}

// Pages are the sign-in pages of one face and the links they serve.
type Pages struct {
	opts      Options
	sealer    *seal.Sealer        // nil without keys
	confirmer *identity.Confirmer // nil without http.auth.client_id (confirm.go)
	local     signIns             // pending here, without a store
	// waiters are the calls and sessions waiting for a sign-in of a link
	// made here, by link id.
	waiters signIns

	mu       sync.Mutex // guards watching and closed
	watching bool       // the loop of watchSignIns runs
	closed   bool
	stop     chan struct{} // closed by Close
	wg       sync.WaitGroup
}

// New makes the sign-in pages of a face; Close stops them.
func New(o Options) (*Pages, error) {
	pg := &Pages{opts: o, stop: make(chan struct{})}
	if len(o.Keys) > 0 {
		sl, err := seal.New(o.Keys, rowFormat)
		if err != nil {
			return nil, err
		}
		pg.sealer = sl
	}
	if o.Auth.Enabled() && o.Auth.ClientID != "" {
		pg.confirmer = identity.NewConfirmer(*o.Auth, nil)
	}
	return pg, nil
}

// Mount serves the pages on mux, each behind check (the face's Origin and
// Host checks: a browser navigates to them with no bearer token, the
// state is the credential).
func (pg *Pages) Mount(mux *http.ServeMux, check func(http.Handler) http.Handler) {
	mux.Handle("GET /auth/start", check(http.HandlerFunc(pg.signInPage)))
	mux.Handle("POST /auth/start", sameOrigin(check(http.HandlerFunc(pg.signInStart))))
	mux.Handle("GET /auth/confirm", check(http.HandlerFunc(pg.signInConfirm)))
	mux.Handle("GET /auth/callback/{server...}", check(http.HandlerFunc(pg.signInCallback)))
}

// Close stops looking for sign-ins finished at other replicas, and waits
// for that loop. Calling it again does nothing.
func (pg *Pages) Close() {
	pg.mu.Lock()
	if pg.closed {
		pg.mu.Unlock()
		return
	}
	pg.closed = true
	pg.mu.Unlock()
	close(pg.stop)
	pg.wg.Wait()
}

// entryKind is what a pending state stands for.
type entryKind string

const (
	kindLink    entryKind = "link"    // a link not yet used
	kindConfirm entryKind = "confirm" // sent to the hub's identity provider (confirm.go)
	kindFlow    entryKind = "flow"    // sent to the upstream's authorization server
	kindWaiter  entryKind = "waiter"  // the call and session told when it is done (this replica's)
)

// signInEntry is a pending link, confirmation or flow, or a waiter.
type signInEntry struct {
	kind               entryKind
	user, server, name string // name: how the user is shown
	expires            time.Time
	link               string // the id of the link it came from, its waiter's key
	flow               *auth.WebFlow
	verifier, nonce    string // kindConfirm: PKCE verifier and ID token nonce
	browser            string // kindFlow: the hash of its browser's cookie (browser.go)

	done        chan struct{} // kindWaiter: closed once signed in
	to          Notifier      // kindWaiter: told when signed in, under elicitation
	elicitation string
}

// signIns are pending entries by key, bounded (STYLE 15).
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

// take removes and returns the live entry under key, of kind, or nil.
func (p *signIns) take(key string, kind entryKind) *signInEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.kind != kind {
		return nil
	}
	delete(p.entries, key)
	if time.Now().After(e.expires) {
		return nil
	}
	return e
}

// peek is the live entry under key, of kind, left in place; or nil.
func (p *signIns) peek(key string, kind entryKind) *signInEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.kind != kind || time.Now().After(e.expires) {
		return nil
	}
	return e
}

// keys are the keys of the live entries.
func (p *signIns) keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	out := make([]string, 0, len(p.entries))
	for k, e := range p.entries {
		if now.Before(e.expires) {
			out = append(out, k)
		}
	}
	return out
}

// signedIn tells the call and session waiting for link's sign-in, if
// they are on this replica: reports whether they are (a waiter is taken
// once, so closed once).
func (pg *Pages) signedIn(link string) bool {
	wt := pg.waiters.take(link, kindWaiter)
	if wt == nil {
		return false
	}
	close(wt.done)
	if b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
		"params": map[string]string{"elicitationId": wt.elicitation}}); err == nil {
		wt.to.Notify(context.Background(), b) // on its GET stream, if open; else dropped
	}
	return true
}

// pendingSignIns keep the pending states: this replica's memory
// (localSignIns), or the store every replica reads (sharedSignIns).
type pendingSignIns interface {
	put(ctx context.Context, key string, e *signInEntry) error
	take(ctx context.Context, key string, kind entryKind) (*signInEntry, error)
	peek(ctx context.Context, key string, kind entryKind) (*signInEntry, error)
}

type localSignIns struct{ p *signIns }

func (l localSignIns) put(_ context.Context, key string, e *signInEntry) error {
	l.p.put(key, e)
	return nil
}

func (l localSignIns) take(_ context.Context, key string, kind entryKind) (*signInEntry, error) {
	return l.p.take(key, kind), nil
}

func (l localSignIns) peek(_ context.Context, key string, kind entryKind) (*signInEntry, error) {
	return l.p.peek(key, kind), nil
}

// pendingSignIns is where the face keeps its pending states: the store
// every replica shares (Options.Store) when there is one and the face
// can seal (session keys), so that
// any replica serves any step; else this replica's memory.
func (pg *Pages) pendingSignIns() pendingSignIns {
	if pg.opts.Store != nil && pg.sealer != nil {
		return sharedSignIns{db: pg.opts.Store, sealer: pg.sealer}
	}
	return localSignIns{&pg.local}
}

func newState() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Link is a link for who, a session's caller reached at base (PublicBase),
// to sign in to server (server.SignInLinker): to is told, under
// elicitation, when the sign-in is done, as is the channel it returns.
func (pg *Pages) Link(who *identity.Identity, base, server, elicitation string, to Notifier) (string, <-chan struct{}, error) {
	if who == nil || who.Kind == identity.KindNone || who.Subject == "" {
		return "", nil, errors.New("this session's caller has no identity")
	}
	user := who.Key() // as the hub's session's UserKey
	state, link := newState(), newState()
	expires := time.Now().Add(signInTTL)
	e := &signInEntry{kind: kindLink, user: user, server: server, name: who.User(), expires: expires, link: link}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := pg.pendingSignIns()
	if err := pending.put(ctx, state, e); err != nil {
		return "", nil, fmt.Errorf("keep the sign-in link: %w", err)
	}
	if sp, ok := pending.(sharedSignIns); ok {
		pg.watchSignIns(sp.db)
	}
	w := &signInEntry{kind: kindWaiter, user: user, server: server, expires: expires, done: make(chan struct{}), to: to, elicitation: elicitation}
	pg.waiters.put(link, w)
	return base + "/auth/start?server=" + url.QueryEscape(server) + "&state=" + state, w.done, nil
}

// PublicBase is the face's URL as the client reached it: scheme and
// host of r (https behind a balancer that says so).
func PublicBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// page writes a short HTML page with status code; body is HTML.
func page(w http.ResponseWriter, code int, title, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Not framed (a page that names a user must not be dressed up as
	// another's), and the state in the URL not sent on as a Referer; a
	// same-origin form still carries its Origin.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body style=\"font-family:sans-serif;max-width:40em;margin:2em auto\">\n%s\n</body></html>\n",
		html.EscapeString(title), body)
}

const unknownLink = "<p>dynamic-mcp: this sign-in link is unknown, used or expired: call the tool again for a new one.</p>"

// signInPage shows what a link signs in to, and as whom, with the button
// that starts it (a POST: fetching the link starts nothing).
func (pg *Pages) signInPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	e, err := pg.pendingSignIns().peek(r.Context(), q.Get("state"), kindLink)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the store could not be read", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in", "<p>dynamic-mcp: the sign-in cannot be read now: try again in a moment.</p>")
		return
	}
	if e == nil || e.server != q.Get("server") {
		page(w, http.StatusBadRequest, "Sign-in", unknownLink)
		return
	}
	server, user := html.EscapeString(e.server), html.EscapeString(e.name)
	as := "<b>" + user + "</b>"
	if a := account(e.user); a != "" && a != e.name {
		as += " (account " + html.EscapeString(a) + ")"
	}
	how := "This link is " + user + "'s alone: whoever uses it signs in for " + user + ". If you are not " + user + ", or did not ask to sign in, close this page."
	if pg.confirms(e.user) {
		how = "You will first sign in to the hub's identity provider, to show that you are " + user + "; the sign-in goes on only if you are."
	}
	page(w, http.StatusOK, "Sign in to "+e.server, fmt.Sprintf(`<h1>Sign in to %s</h1>
<p>You are signing in to <b>%s</b> as %s, for the hub to call it for you.</p>
<p>%s</p>
<form method="post" action="/auth/start"><input type="hidden" name="server" value="%s"><input type="hidden" name="state" value="%s"><button type="submit">Sign in to %s as %s</button></form>`,
		server, server, as, how, server, html.EscapeString(q.Get("state")), server, user))
}

// account is the account of user (a caller's key) as the page shows it:
// the subject of a JWT caller, the name of a static token. The name a
// page shows besides it is a claim its caller may choose, at some
// identity providers, to read as another's.
func account(user string) string {
	_, a, _ := strings.Cut(user, ":")
	a, _, _ = strings.Cut(a, " sha256:")
	return a
}

// signInStart uses a link up (the page's POST) and sends the browser on:
// to the hub's identity provider first, where the link's user must be
// confirmed, else to the upstream's authorization server.
func (pg *Pages) signInStart(w http.ResponseWriter, r *http.Request) {
	// Anyone may post here (the state is the credential): the form is
	// read within the body timeout, as /mcp's bodies are, so that a
	// trickled one holds no connection for long.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(pg.opts.BodyTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	err := r.ParseForm()
	if err != nil {
		// The deadline stays set on these ways out, and the connection
		// closes: net/http reads what is left of the body (up to 256 KB)
		// after the handler returns, even on a connection it then closes,
		// and a deadline lifted here would let a trickling client hold it
		// (measured: as long as the client trickled, against the body
		// timeout with the deadline kept).
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			w.Header().Set("Connection", "close") // the rest of the body is not waited for
			page(w, http.StatusRequestTimeout, "Sign-in", "<p>dynamic-mcp: the sign-in form came too slowly.</p>")
			return
		}
		w.Header().Set("Connection", "close")
		page(w, http.StatusBadRequest, "Sign-in", "<p>dynamic-mcp: not a sign-in form.</p>")
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	pending := pg.pendingSignIns()
	e, err := pending.take(r.Context(), r.PostForm.Get("state"), kindLink)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the store could not be read", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in", "<p>dynamic-mcp: the sign-in cannot be read now: try again in a moment.</p>")
		return
	}
	if e == nil || e.server != r.PostForm.Get("server") {
		page(w, http.StatusBadRequest, "Sign-in", unknownLink)
		return
	}
	if pg.confirms(e.user) {
		pg.confirmStart(w, r, pending, e)
		return
	}
	pg.upstreamStart(w, r, pending, e)
}

// upstreamStart sends the browser to the authorization server of e's
// server, the flow kept for the callback.
func (pg *Pages) upstreamStart(w http.ResponseWriter, r *http.Request, pending pendingSignIns, e *signInEntry) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	var flow *auth.WebFlow
	err := errors.New("this hub runs no per-user sign-ins")
	if pg.opts.SignIns != nil {
		flow, err = pg.opts.SignIns.BeginUserSignIn(ctx, e.server, e.user, PublicBase(r)+callbackPath(e.server))
	}
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in could not start", "server", e.server, "err", err)
		page(w, http.StatusBadGateway, "Sign-in", "<p>dynamic-mcp: the sign-in could not start: "+html.EscapeString(briefly(err))+"</p>")
		return
	}
	if e.flow != nil { // the callback's second try: there is no third
		flow.Retry()
	}
	next := &signInEntry{kind: kindFlow, user: e.user, server: e.server, name: e.name, expires: time.Now().Add(signInTTL), link: e.link, flow: flow,
		browser: bindBrowser(w, r, flow.State())}
	if err := pending.put(ctx, flow.State(), next); err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the store could not be written", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in", "<p>dynamic-mcp: the sign-in cannot be kept now: call the tool again for a new link.</p>")
		return
	}
	http.Redirect(w, r, flow.AuthURL, http.StatusSeeOther)
}

// signInCallback takes the authorization server's redirect, exchanges the
// code and keeps the token for the user the flow was started for.
func (pg *Pages) signInCallback(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	e, err := pg.pendingSignIns().take(r.Context(), state, kindFlow)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the store could not be read", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in", "<p>dynamic-mcp: the sign-in cannot be read now: call the tool again for a new link.</p>")
		return
	}
	if e == nil {
		page(w, http.StatusBadRequest, "Sign-in", "<p>dynamic-mcp: this sign-in is unknown, finished or expired: call the tool again for a new link.</p>")
		return
	}
	if r.PathValue("server") != e.server {
		// Another server's redirect with this flow's state: a mix-up
		// (browser.go).
		pg.opts.Logger.Warn("per-user sign-in: a callback for another server carried a flow's state; refused", "server", e.server, "at", r.PathValue("server"))
		page(w, http.StatusBadRequest, "Sign-in", "<p>dynamic-mcp: this sign-in came back from another server than the one it was sent to. Nothing was signed in: call the tool again for a new link.</p>")
		return
	}
	if !sameBrowser(w, r, state, e.browser) {
		pg.opts.Logger.Warn("per-user sign-in: a callback came from another browser than the one that started it; refused", "server", e.server, "user", e.name)
		page(w, http.StatusForbidden, "Not this browser's sign-in", fmt.Sprintf(`<h1>This sign-in was started in another browser</h1>
<p>It signs <b>%s</b> in to %s, and was not started in this browser. Nothing was signed in, and the sign-in is used up.</p>
<p>If someone sent you a link to sign in, do not follow it. To sign in to %s yourself, call its tool through the hub: you will get a link of your own.</p>`,
			html.EscapeString(e.name), html.EscapeString(e.server), html.EscapeString(e.server)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	rec, err := e.flow.Finish(ctx, r.URL.Query())
	if errors.Is(err, auth.ErrClientRejected) && !e.flow.Retried() {
		// The authorization server forgot the hub's client since the
		// start: once more, where the client is checked and registered
		// again (auth.Clients).
		pg.opts.Logger.Info("per-user sign-in: the authorization server rejected the hub's client: starting again", "server", e.server)
		pg.upstreamStart(w, r, pg.pendingSignIns(), e)
		return
	}
	if err == nil {
		err = pg.opts.SignIns.SaveUserSignIn(e.user, rec)
	}
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in failed", "server", e.server, "err", err)
		page(w, http.StatusBadRequest, "Sign-in failed", fmt.Sprintf("<p>dynamic-mcp: the sign-in to %s failed: %s</p>", html.EscapeString(e.server), html.EscapeString(briefly(err))))
		return
	}
	pg.opts.Logger.Info("a caller signed in to a per-user server", "server", e.server, "user", e.name)
	// The call waiting for it, and its session: on this replica, or
	// told by a mark in the store (shared.go).
	if !pg.signedIn(e.link) {
		if sp, ok := pg.pendingSignIns().(sharedSignIns); ok {
			if err := sp.markDone(ctx, e.link, time.Now().Add(signInTTL)); err != nil {
				pg.opts.Logger.Warn("per-user sign-in: cannot tell the other replicas", "err", err)
			}
		}
	}
	page(w, http.StatusOK, "Signed in", fmt.Sprintf("<p>dynamic-mcp: %s is signed in to %s. You can close this window and call again.</p>", html.EscapeString(e.name), html.EscapeString(e.server)))
}
