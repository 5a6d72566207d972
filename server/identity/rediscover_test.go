package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The issuer moves its keys to a new jwks_uri, and whoever gets the old
// URL (a lapsed domain, a dangling DNS name) serves keys of their own
// there: a hub running since before the move reads the metadata again
// (every jwks_refresh, with the keys) and takes its keys from the new
// URL, so a token signed by the old URL's new owner is refused. A
// metadata that cannot be read again leaves the one held in use.
func TestMetadataReadAgain(t *testing.T) {
	real := newIssuer(t) // its keys, and tokens signed by them
	evil, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	evilKey := jose.JSONWebKey{Key: evil, KeyID: "evil", Algorithm: "ES256", Use: "sig"}
	var moved, metadataDown atomic.Bool
	var srv *httptest.Server
	serveKeys := func(w http.ResponseWriter, keys ...jose.JSONWebKey) {
		var set jose.JSONWebKeySet
		for _, k := range keys {
			set.Keys = append(set.Keys, k.Public())
		}
		json.NewEncoder(w).Encode(set)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			if metadataDown.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			jwks := srv.URL + "/old-jwks"
			if moved.Load() {
				jwks = srv.URL + "/new-jwks"
			}
			json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL + "/", "jwks_uri": jwks})
		case "/old-jwks":
			if moved.Load() {
				serveKeys(w, evilKey) // the old URL's new owner
				return
			}
			real.mu.Lock()
			defer real.mu.Unlock()
			serveKeys(w, real.keys...)
		case "/new-jwks":
			real.mu.Lock()
			defer real.mu.Unlock()
			serveKeys(w, real.keys...)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	clk := &clock{t: time.Now()}
	auth := config.HTTPAuth{Issuer: srv.URL + "/", Audience: audience, Claims: config.AuthClaims{Subject: "sub"}, JWKSRefresh: 10 * time.Minute}
	v := NewVerifier(auth, nil, srv.Client(), clk.now)
	v.sleep = func(_ context.Context, d time.Duration) error { clk.add(d); return nil }
	ctx := context.Background()
	claims := func() map[string]any {
		return real.claims(map[string]any{"iss": srv.URL + "/", "exp": clk.now().Add(time.Hour).Unix()})
	}
	if _, err := v.Verify(ctx, real.token(t, claims())); err != nil {
		t.Fatal(err)
	}
	moved.Store(true)
	clk.add(auth.JWKSRefresh + time.Second)
	var te *TokenError
	if _, err := v.Verify(ctx, sign(t, &evilKey, claims())); !errors.As(err, &te) {
		t.Errorf("a token of the old jwks_uri's new owner, after the issuer moved its keys: %v, want refused", err)
	}
	if _, err := v.Verify(ctx, real.token(t, claims())); err != nil {
		t.Errorf("a token of the issuer's, after it moved its keys: %v", err)
	}
	// The metadata down: the one held stays in use.
	metadataDown.Store(true)
	clk.add(auth.JWKSRefresh + time.Second)
	if _, err := v.Verify(ctx, real.token(t, claims())); err != nil {
		t.Errorf("the metadata down, read before: %v", err)
	}
}
