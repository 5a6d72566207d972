package mcphttp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
)

// The guard accepts every named token and tells the handler behind it
// whose it is; with no token checked every caller is one credential.
func TestGuardNamesTheCredential(t *testing.T) {
	t.Parallel()
	g := httpguard.NewGuard(httpguard.GuardOptions{Token: "main-token", Tokens: map[string]string{"a": "token-of-a-0123456", "b": "token-of-b-0123456"}})
	var got string
	h := g.Check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = httpguard.CredentialOf(r.Context()) }))
	for token, want := range map[string]string{"main-token": httpguard.DefaultCredential, "token-of-a-0123456": "a", "token-of-b-0123456": "b", "token-of-c-0123456": "", "": ""} {
		got = ""
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/x", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if wantCode := map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[want != ""]; w.Code != wantCode || got != want {
			t.Errorf("token %q: %d, credential %q; want %d, %q", token, w.Code, got, wantCode, want)
		}
	}
	// A guard with no token at all refuses everyone, an empty bearer too.
	none := httpguard.NewGuard(httpguard.GuardOptions{}).Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/x", nil)
	req.Header.Set("Authorization", "Bearer ")
	w := httptest.NewRecorder()
	none.ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("no credentials, empty bearer: %d, want 401", w.Code)
	}
	// No auth: every caller is httpguard.NoAuthCredential.
	got = ""
	open := httpguard.NewGuard(httpguard.GuardOptions{NoAuth: true}).Check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = httpguard.CredentialOf(r.Context()) }))
	open.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "http://127.0.0.1/x", nil))
	if got != httpguard.NoAuthCredential {
		t.Errorf("no auth: credential %q, want %q", got, httpguard.NoAuthCredential)
	}
}
