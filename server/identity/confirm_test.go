package identity

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The Confirmer sends the browser to the issuer with PKCE and a nonce,
// and takes from the code an identity only out of an ID token that the
// issuer signed for the hub's client, with the nonce sent, not expired:
// its subject (by http.auth.claims.subject) and name, keyed as the
// caller's access tokens are.
func TestConfirmer(t *testing.T) {
	is := newIssuer(t)
	var idToken string
	var form map[string]string
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL + "/", "jwks_uri": is.srv.URL + "/jwks",
			"authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form = map[string]string{"code": r.PostForm.Get("code"), "code_verifier": r.PostForm.Get("code_verifier")}
		w.Header().Set("Content-Type", "application/json")
		out := map[string]any{"access_token": "x", "token_type": "Bearer"}
		if idToken != "" {
			out["id_token"] = idToken
		}
		json.NewEncoder(w).Encode(out)
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()
	c := NewConfirmer(config.HTTPAuth{Issuer: srv.URL + "/", Audience: audience, ClientID: "hub", Claims: config.AuthClaims{Subject: "sub", Name: "name"}}, srv.Client())

	u, err := c.AuthURL(t.Context(), "https://hub.example/auth/confirm", "the-state", "the-nonce", "the-verifier-0123456789012345678901234567890123")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{srv.URL + "/auth?", "client_id=hub", "nonce=the-nonce", "state=the-state", "code_challenge_method=S256", "scope=openid",
		"redirect_uri=https%3A%2F%2Fhub.example%2Fauth%2Fconfirm"} {
		if !strings.Contains(u, want) {
			t.Errorf("the authorization URL %s lacks %s", u, want)
		}
	}
	id := func(over map[string]any) string {
		c := map[string]any{"iss": srv.URL + "/", "sub": "alice", "name": "Alice", "aud": "hub", "nonce": "the-nonce",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
		for k, v := range over {
			c[k] = v
		}
		return is.token(t, c)
	}
	other := newIssuer(t)
	for _, tc := range []struct {
		name, token, want string
	}{
		{"good", id(nil), ""},
		{"another nonce", id(map[string]any{"nonce": "not-it"}), "nonce"},
		{"another client's", id(map[string]any{"aud": "someone-else"}), "refused"},
		{"another issuer's", id(map[string]any{"iss": "https://evil.example/"}), "refused"},
		{"expired", id(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}), "refused"},
		{"signed by another key", func() string {
			other.mu.Lock()
			k := other.keys[0]
			other.mu.Unlock()
			return sign(t, &k, map[string]any{"iss": srv.URL + "/", "sub": "alice", "aud": "hub", "nonce": "the-nonce", "exp": time.Now().Add(time.Hour).Unix()})
		}(), "refused"},
		{"a subject with a control character", id(map[string]any{"sub": "alice\nbob"}), "control character"},
		{"none", "", "no ID token"},
	} {
		idToken = tc.token
		who, err := c.Exchange(t.Context(), "https://hub.example/auth/confirm", "the-code", "the-verifier", "the-nonce")
		switch {
		case tc.want == "" && (err != nil || who.Key() != "jwt:alice" || who.User() != "Alice"):
			t.Errorf("%s: %+v %v; want jwt:alice, Alice", tc.name, who, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %+v %v; want an error with %q", tc.name, who, err, tc.want)
		}
	}
	if form["code"] != "the-code" || form["code_verifier"] != "the-verifier" {
		t.Errorf("the token request: %v", form)
	}
}
