package mcphttp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
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
// authorization server), Secure behind https, for /auth/callback alone,
// and lives as long as the flow; one per flow, so that two sign-ins of
// one browser at once do not undo each other.

// browserCookie is the name of the cookie of the flow with state.
func browserCookie(state string) string { return "dynamic-mcp-signin-" + rowKey(state)[:16] }

func browserSum(v string) string {
	sum := sha256.Sum256([]byte("dynamic-mcp sign-in browser\x00" + v))
	return hex.EncodeToString(sum[:])
}

// bindBrowser sets the cookie of the flow with state on w, and returns
// what the flow keeps to check it.
func bindBrowser(w http.ResponseWriter, r *http.Request, state string) string {
	v := newState()
	http.SetCookie(w, &http.Cookie{Name: browserCookie(state), Value: v, Path: "/auth/callback", MaxAge: int(signInTTL.Seconds()),
		HttpOnly: true, Secure: strings.HasPrefix(publicBase(r), "https:"), SameSite: http.SameSiteLaxMode})
	return browserSum(v)
}

// sameBrowser reports whether r comes from the browser bound to the flow
// with state (its hash sum), and clears the flow's cookie.
func sameBrowser(w http.ResponseWriter, r *http.Request, state, sum string) bool {
	c, err := r.Cookie(browserCookie(state))
	http.SetCookie(w, &http.Cookie{Name: browserCookie(state), Value: "", Path: "/auth/callback", MaxAge: -1,
		HttpOnly: true, Secure: strings.HasPrefix(publicBase(r), "https:"), SameSite: http.SameSiteLaxMode})
	return err == nil && sum != "" && subtle.ConstantTimeCompare([]byte(browserSum(c.Value)), []byte(sum)) == 1
}
