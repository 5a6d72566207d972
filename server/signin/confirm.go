package signin

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
)

// A per-user sign-in link bound to its user (http.auth.client_id): the
// link of a caller known by a JWT of http.auth's issuer sends the browser
// first to that issuer, where the hub is an OpenID Connect client
// (identity.Confirmer), with /auth/confirm as the redirect. The sign-in
// goes on to the upstream only when the ID token's subject is the
// caller's; anyone else who opens the link (it leaked into a log, a
// chat, a screen share) is refused 403, and the link is used up. A
// caller of a static token has no account at the issuer to show: its
// link stays a bearer secret, confirmed by the page alone.

// confirms reports whether a link of user is confirmed at the identity
// provider before it goes on.
func (pg *Pages) confirms(user string) bool {
	return pg.confirmer != nil && strings.HasPrefix(user, string(identity.KindJWT)+":")
}

// confirmStart sends the browser to the hub's identity provider, the
// link's user kept under a new state, with the PKCE verifier and nonce.
func (pg *Pages) confirmStart(w http.ResponseWriter, r *http.Request, pending pendingSignIns, e *signInEntry) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	state := newState()
	next := &signInEntry{kind: kindConfirm, user: e.user, server: e.server, name: e.name, expires: time.Now().Add(signInTTL), link: e.link,
		verifier: oauth2.GenerateVerifier(), nonce: newState()}
	to, err := pg.confirmer.AuthURL(ctx, PublicBase(r)+"/auth/confirm", state, next.nonce, next.verifier)
	if err == nil {
		err = pending.put(ctx, state, next)
	}
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: cannot send the browser to the hub's identity provider", "server", e.server, "err", err)
		page(w, http.StatusBadGateway, "Sign-in", "<p>dynamic-mcp: the sign-in could not start: "+html.EscapeString(briefly(err))+"</p>")
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// signInConfirm takes the identity provider's redirect: the sign-in goes
// on to the upstream for the link's user, and for no one else.
func (pg *Pages) signInConfirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pending := pg.pendingSignIns()
	e, err := pending.take(r.Context(), q.Get("state"), kindConfirm)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the store could not be read", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in", "<p>dynamic-mcp: the sign-in cannot be read now: call the tool again for a new link.</p>")
		return
	}
	if e == nil || pg.confirmer == nil {
		page(w, http.StatusBadRequest, "Sign-in", "<p>dynamic-mcp: this sign-in is unknown, finished or expired: call the tool again for a new link.</p>")
		return
	}
	if q.Get("error") != "" {
		page(w, http.StatusBadRequest, "Sign-in", fmt.Sprintf("<p>dynamic-mcp: the identity provider said %s: %s. Nothing was signed in.</p>",
			html.EscapeString(q.Get("error")), html.EscapeString(q.Get("error_description"))))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	who, err := pg.confirmer.Exchange(ctx, PublicBase(r)+"/auth/confirm", q.Get("code"), e.verifier, e.nonce)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: the identity provider's sign-in failed", "server", e.server, "err", err)
		page(w, http.StatusBadRequest, "Sign-in failed", "<p>dynamic-mcp: the sign-in to the hub's identity provider failed: "+html.EscapeString(briefly(err))+". Nothing was signed in.</p>")
		return
	}
	if who.Key() != e.user {
		pg.opts.Logger.Warn("per-user sign-in: a link was opened by another user than its own; refused", "server", e.server, "user", e.name, "opened_by", who.User())
		page(w, http.StatusForbidden, "Not your sign-in link", fmt.Sprintf(`<h1>This sign-in link is not yours</h1>
<p>It signs <b>%s</b> in to %s, and you signed in to the hub's identity provider as <b>%s</b>. Nothing was signed in, and the link is used up.</p>
<p>To sign in to %s yourself, call its tool through the hub: you will get a link of your own.</p>`,
			html.EscapeString(e.name), html.EscapeString(e.server), html.EscapeString(who.User()), html.EscapeString(e.server)))
		return
	}
	pg.upstreamStart(w, r, pending, e)
}
