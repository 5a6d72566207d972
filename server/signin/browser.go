package signin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// A flow's callback is bound to the browser that was sent to the
// upstream's authorization server: upstreamStart sets a cookie of its
// own (a random value, its hash kept with the flow) on the redirect, and
// signInCallback goes on only when the browser brings it back. Without
// it the flow's state alone finished a sign-in: Mallory who stopped his
// own sign-in at the upstream's authorization URL and sent that URL to
// Alice (the upstream's own page, which may not even ask her again) had
// Alice's upstream account kept as his. The cookie is HttpOnly,
// SameSite=Lax (the callback is a top-level navigation from the
// authorization server), a __Host- cookie behind https, and lives as
// long as the flow; one per flow, so that two sign-ins of one browser at
// once do not undo each other.

// Each server's flows have a redirect of their own, callbackPath: a
// server's authorization server that sends the browser on to another's
// (a mix-up, RFC 9700 §4.4), with the hub's client there and its own
// flow's state, gets the browser back at the other's callback, where
// that state is refused, rather than the other's code sent to its own
// token endpoint. (The issuer, where the redirect names it, RFC 9207,
// is checked besides.)

// callbackPath is the path of server's (its ID) redirect.
func callbackPath(server string) string {
	parts := strings.Split(server, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/auth/callback/" + strings.Join(parts, "/")
}

// browserCookie is the cookie of the flow with state, as r reached the
// face, without its value: behind https a __Host- cookie (Secure, Path
// /, no Domain), which a page of a sibling domain cannot set for the
// face's (cookie tossing: Mallory setting his own flow's cookie in
// Alice's browser); over plain http, for /auth/callback alone.
func browserCookie(r *http.Request, state string) *http.Cookie {
	c := &http.Cookie{Name: "dynamic-mcp-signin-" + rowKey(state)[:16], Path: "/auth/callback", HttpOnly: true, SameSite: http.SameSiteLaxMode}
	if strings.HasPrefix(PublicBase(r), "https:") {
		c.Name, c.Path, c.Secure = "__Host-"+c.Name, "/", true
	}
	return c
}

func browserSum(v string) string {
	sum := sha256.Sum256([]byte("dynamic-mcp sign-in browser\x00" + v))
	return hex.EncodeToString(sum[:])
}

// bindBrowser sets the cookie of the flow with state on w, and returns
// what the flow keeps to check it.
func bindBrowser(w http.ResponseWriter, r *http.Request, state string) string {
	c := browserCookie(r, state)
	c.Value, c.MaxAge = newState(), int(signInTTL.Seconds())
	http.SetCookie(w, c)
	return browserSum(c.Value)
}

// sameBrowser reports whether r comes from the browser bound to the flow
// with state (its hash sum), and clears the flow's cookie.
func sameBrowser(w http.ResponseWriter, r *http.Request, state, sum string) bool {
	c := browserCookie(r, state)
	got, err := r.Cookie(c.Name)
	c.MaxAge = -1
	http.SetCookie(w, c)
	return err == nil && sum != "" && subtle.ConstantTimeCompare([]byte(browserSum(got.Value)), []byte(sum)) == 1
}
