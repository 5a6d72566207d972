package mcphttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Opaque access tokens are let in by the issuer's introspection
// endpoint (http.auth.introspection): an active one is its caller; an
// inactive one is 401 invalid_token and counts against the address like
// any wrong token (the issuer cannot say whether it was guessed); the
// endpoint failing is 503 with Retry-After (RFC 6750 keeps 401
// invalid_token for a token that is bad, and a client drops such a
// token: one that may be good is not to be dropped for the hub's
// trouble), counting nothing.
func TestOpaqueTokensByIntrospection(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		resp := map[string]any{"active": false}
		if r.PostFormValue("token") == "ory_at_alice.good" {
			resp = map[string]any{"active": true, "sub": "alice", "aud": []string{testAudience}, "iss": srv.URL,
				"exp": time.Now().Add(time.Hour).Unix(), "token_use": "access_token", "ext": map[string]any{"name": "Alice"}}
		}
		json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()
	g := httpguard.NewGuard(httpguard.GuardOptions{MaxAuthFailures: 2, Auth: &config.HTTPAuth{Issuer: srv.URL, Audience: testAudience,
		Claims:        config.AuthClaims{Subject: "sub", Name: "ext.name"},
		Introspection: &config.AuthIntrospection{URL: srv.URL + "/introspect", CacheTTL: time.Nanosecond}}})
	var who string
	h := g.Check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who = httpguard.IdentityOf(r.Context()).Key() + " " + httpguard.IdentityOf(r.Context()).User()
	}))
	try := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := try("ory_at_alice.good"); w.Code != http.StatusOK || who != "jwt:alice Alice" {
		t.Fatalf("an active opaque token: %d %q %s", w.Code, who, w.Body)
	}
	down.Store(true)
	for range 4 {
		if w := try("ory_at_alice.good"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("the introspection endpoint down: %d %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
	}
	down.Store(false)
	if w := try("ory_at_alice.good"); w.Code != http.StatusOK {
		t.Fatalf("the endpoint back: %d (503s must not lock the address out)", w.Code)
	}
	w := try("ory_at_guess.1")
	if c := w.Header().Get("WWW-Authenticate"); w.Code != http.StatusUnauthorized || !strings.Contains(c, `error="invalid_token"`) || !strings.Contains(c, "not active") {
		t.Errorf("an inactive token: %d %q", w.Code, c)
	}
	try("ory_at_guess.2")
	if w := try("ory_at_guess.3"); w.Code != http.StatusTooManyRequests {
		t.Errorf("inactive tokens: the third is %d, want 429 after 2", w.Code)
	}
}
