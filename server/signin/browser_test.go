package signin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Behind https (a balancer that says so) the flow's cookie is a __Host-
// cookie: Secure, Path /, no Domain, so that no page of a sibling domain
// can set it in another's browser; over http it is for /auth/callback
// alone. Either way HttpOnly and SameSite=Lax, and only its own
// browser's value passes.
func TestSignInBrowserCookie(t *testing.T) {
	for _, https := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "http://hub.example/auth/start", nil)
		if https {
			r.Header.Set("X-Forwarded-Proto", "https")
		}
		w := httptest.NewRecorder()
		sum := bindBrowser(w, r, "the-state")
		cs := w.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("cookies: %v", cs)
		}
		c := cs[0]
		if c.HttpOnly != true || c.SameSite != http.SameSiteLaxMode || c.Domain != "" || c.Secure != https ||
			strings.HasPrefix(c.Name, "__Host-") != https || (https && c.Path != "/") || (!https && c.Path != "/auth/callback") {
			t.Errorf("https %v: the cookie %s", https, w.Header().Get("Set-Cookie"))
		}
		back := httptest.NewRequest(http.MethodGet, "http://hub.example/auth/callback", nil)
		back.Header = r.Header.Clone()
		if sameBrowser(httptest.NewRecorder(), back, "the-state", sum) {
			t.Error("a callback without the cookie passed")
		}
		back.AddCookie(&http.Cookie{Name: c.Name, Value: "mallory's"})
		if sameBrowser(httptest.NewRecorder(), back, "the-state", sum) {
			t.Error("a callback with another value passed")
		}
		back = httptest.NewRequest(http.MethodGet, "http://hub.example/auth/callback", nil)
		back.Header = r.Header.Clone()
		back.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		if !sameBrowser(httptest.NewRecorder(), back, "the-state", sum) {
			t.Error("the callback of its own browser was refused")
		}
	}
}
