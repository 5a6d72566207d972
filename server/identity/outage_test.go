package identity

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The issuer rotates its key while its JWKS cannot be fetched: a token
// of the new key cannot be checked now, which is the hub's trouble
// (ErrUnavailable, 503), not a forged token (a 401 tells the client to
// drop a good token, and counts against its address); once the keys can
// be fetched, it verifies. The keys held go on verifying meanwhile.
func TestKeysDownDuringRotation(t *testing.T) {
	is := newIssuer(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	auth := config.HTTPAuth{Issuer: is.url(), Audience: audience, Claims: config.AuthClaims{Subject: "sub"}, JWKSRefresh: time.Hour}
	v := NewVerifier(auth, nil, is.srv.Client(), func() time.Time { return time.Unix(0, clock.Load()) })
	v.sleep = func(_ context.Context, d time.Duration) error { clock.Add(int64(d)); return nil }
	ctx := context.Background()
	old := is.token(t, is.claims(nil))
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}
	is.jwksDown.Store(true)
	is.rotate("k2")
	rotated := is.token(t, is.claims(nil))
	for range 3 { // the fetch that fails, and one that finds it failed
		if _, err := v.Verify(ctx, rotated); !errors.Is(err, ErrUnavailable) {
			t.Errorf("a token of the new key, the keys down: %v, want ErrUnavailable", err)
		}
	}
	if _, err := v.Verify(ctx, old); err != nil {
		t.Errorf("a token of a key held, the keys down: %v", err)
	}
	is.jwksDown.Store(false)
	clock.Add(int64(MinKeyRefetch))
	if _, err := v.Verify(ctx, rotated); err != nil {
		t.Errorf("the keys back: %v", err)
	}
}
