package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A kid is the caller's text: whatever it says, a token signed by a key
// the issuer does not have is a forged token, never the issuer's
// trouble nor one the issuer signed.
func TestAttackerKids(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, kid := range []string{errKeysUnavailable.Error(), "expected audience", "issued by a different provider", "before the nbf", "oidc: token is expired"} {
		_, err := v.Verify(context.Background(), sign(t, &jose.JSONWebKey{Key: ec, KeyID: kid, Algorithm: "ES256"}, is.claims(nil)))
		var te *TokenError
		if !errors.As(err, &te) || te.Signed || errors.Is(err, ErrUnavailable) {
			t.Errorf("kid %q: %v, want an unsigned TokenError", kid, err)
		}
	}
}

// A caller that goes away while the issuer is first asked does not make
// the hub think the issuer down: the next token verifies.
func TestCancelledCallerDoesNotDisableSignIn(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v.Verify(ctx, is.token(t, is.claims(nil)))
	if _, err := v.Verify(context.Background(), is.token(t, is.claims(nil))); err != nil {
		t.Errorf("after a cancelled caller: %v", err)
	}
	// The same for the first fetch of the keys.
	k := &keySet{url: is.srv.URL + "/jwks", client: is.srv.Client(), logger: v.logger, refresh: config.DefaultJWKSRefresh,
		minRefetch: MinKeyRefetch, now: v.now, sleep: func(context.Context, time.Duration) error { return errors.New("held") }}
	k.VerifySignature(ctx, is.token(t, is.claims(nil)))
	if _, err := k.VerifySignature(context.Background(), is.token(t, is.claims(nil))); err != nil {
		t.Errorf("keys after a cancelled caller: %v", err)
	}
}

// The keys are never fetched in the clear: a discovery document whose
// jwks_uri is http:// on a host not loopback is the issuer's trouble,
// and no token verifies.
func TestJWKSURLMustBeHTTPS(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{{"http://keys.example/jwks", false}, {"ftp://keys.example/jwks", false}, {"jwks", false}, {"", false},
		{"https://www.googleapis.com/oauth2/v3/certs", true}, {"http://127.0.0.1:8080/jwks", true}, {"http://localhost/jwks", true}} {
		if err := checkJWKSURL(c.url); (err == nil) != c.ok {
			t.Errorf("jwks_uri %q: %v, want ok %v", c.url, err, c.ok)
		}
	}
}
