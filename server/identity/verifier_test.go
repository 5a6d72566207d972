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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/testkeys"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// issuer is a local authorization server: its discovery document and
// JWKS, and tokens signed by its current key.
type issuer struct {
	srv       *httptest.Server
	jwksCalls atomic.Int64
	jwksDown  atomic.Bool // /jwks answers 503
	mu        sync.Mutex
	keys      []jose.JSONWebKey // private; the first signs
	path      string            // the issuer's path; "" is "/"
}

func newIssuer(t testing.TB) *issuer {
	is := &issuer{}
	is.rotate("k1")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL + "/", "jwks_uri": is.srv.URL + "/jwks",
			"authorization_endpoint": is.srv.URL + "/auth", "token_endpoint": is.srv.URL + "/token"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksCalls.Add(1)
		if is.jwksDown.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		var set jose.JSONWebKeySet
		for _, k := range is.keys {
			set.Keys = append(set.Keys, k.Public())
		}
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// rotate makes the next test key, kid, the one that signs from now on;
// the old ones stay published unless drop.
func (is *issuer) rotate(kid string, drop ...bool) {
	pk := testkeys.Next()
	is.mu.Lock()
	defer is.mu.Unlock()
	k := jose.JSONWebKey{Key: pk, KeyID: kid, Algorithm: "RS256", Use: "sig"}
	if len(drop) > 0 && drop[0] {
		is.keys = nil
	}
	is.keys = append([]jose.JSONWebKey{k}, is.keys...)
}

func (is *issuer) url() string {
	if is.path != "" {
		return is.srv.URL + is.path
	}
	return is.srv.URL + "/"
}

// sign signs claims with key (nil: the issuer's current key).
func sign(t testing.TB, key *jose.JSONWebKey, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	obj, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := obj.CompactSerialize()
	return out
}

func (is *issuer) token(t testing.TB, claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[0]
	is.mu.Unlock()
	return sign(t, &k, claims)
}

const audience = "https://hub.example/mcp"

func (is *issuer) claims(over map[string]any) map[string]any {
	c := map[string]any{"iss": is.url(), "sub": "alice", "aud": []string{audience}, "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix(), "name": "Alice", "groups": []string{"admins", "dev"}}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func newTestVerifier(is *issuer, auth config.HTTPAuth) *Verifier {
	auth.Issuer, auth.Audience = is.url(), audience
	if auth.Claims.Subject == "" {
		auth.Claims = config.AuthClaims{Subject: "sub", Name: "name", Groups: "groups"}
	}
	return NewVerifier(auth, nil, is.srv.Client(), nil)
}

// A token of the issuer for the hub gives its caller's identity; every
// other is refused with the reason a client is told.
func TestVerify(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{Profiles: []config.AuthProfile{{Claim: "ext.team", Value: "docs", Profile: "p"}}})
	ctx := context.Background()
	id, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"ext": map[string]any{"team": "docs"}})))
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != KindJWT || id.Subject != "alice" || id.Name != "Alice" || strings.Join(id.Groups, ",") != "admins,dev" || !id.Has("ext.team", "docs") || id.Key() != "jwt:alice" {
		t.Errorf("identity: %+v", id)
	}
	// aud as a string, and among others.
	for _, aud := range []any{audience, []string{"https://other.example", audience}} {
		if _, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"aud": aud}))); err != nil {
			t.Errorf("aud %v: %v", aud, err)
		}
	}
	other := testkeys.Next()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := is.token(t, is.claims(nil))
	parts := strings.Split(good, ".")
	flip := map[byte]byte{'A': 'B'}[parts[2][20]]
	if flip == 0 {
		flip = 'A'
	}
	tampered := parts[0] + "." + parts[1] + "." + parts[2][:20] + string(flip) + parts[2][21:]
	payloadSwapped := parts[0] + "." + strings.Split(is.token(t, is.claims(map[string]any{"sub": "mallory"})), ".")[1] + "." + parts[2]
	is.jwksCalls.Store(0)
	for _, c := range []struct {
		name, token, want string
	}{
		{"another audience", is.token(t, is.claims(map[string]any{"aud": []string{"https://other.example/mcp"}})), "not for this resource"},
		{"no audience", is.token(t, is.claims(map[string]any{"aud": nil})), "not for this resource"},
		{"expired", is.token(t, is.claims(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})), "expired"},
		{"no exp", is.token(t, is.claims(map[string]any{"exp": nil})), "expired"},
		{"not yet valid", is.token(t, is.claims(map[string]any{"nbf": time.Now().Add(2 * time.Minute).Unix()})), "not valid yet"},
		{"another issuer", is.token(t, is.claims(map[string]any{"iss": "https://evil.example/"})), "another issuer"},
		{"no subject", is.token(t, is.claims(map[string]any{"sub": nil})), "no subject"},
		{"tampered signature", tampered, "signature does not verify"},
		{"swapped payload", payloadSwapped, "signature does not verify"},
		{"signed by another key, same kid", sign(t, &jose.JSONWebKey{Key: other, KeyID: "k1", Algorithm: "RS256"}, is.claims(nil)), "signature does not verify"},
		{"signed by an unknown key", sign(t, &jose.JSONWebKey{Key: ec, KeyID: "nope", Algorithm: "ES256"}, is.claims(nil)), "unknown key"},
		{"HMAC", sign(t, &jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k1", Algorithm: "HS256"}, is.claims(nil)), "malformed"},
		{"not a JWT", "abc", "not a JWT"},
		{"garbage", "a.b.c", "malformed"},
	} {
		_, err := v.Verify(ctx, c.token)
		var te *TokenError
		if !errors.As(err, &te) || !strings.Contains(te.Description, c.want) {
			t.Errorf("%s: %v, want a TokenError saying %q", c.name, err, c.want)
		}
	}
	if n := is.jwksCalls.Load(); n > 1 {
		t.Errorf("refused tokens fetched the keys %d times, want at most once (the unknown key)", n)
	}
}

// A rotated key is picked up as soon as a token names it; forged tokens
// fetch the keys at most once every MinRefetch; a withdrawn key stops
// verifying once the keys are older than jwks_refresh.
func TestKeyRotation(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	auth := config.HTTPAuth{Issuer: is.url(), Audience: audience, Claims: config.AuthClaims{Subject: "sub"}, JWKSRefresh: time.Hour}
	v := NewVerifier(auth, nil, is.srv.Client(), func() time.Time { return time.Unix(0, clock.Load()) })
	v.sleep = func(_ context.Context, d time.Duration) error { clock.Add(int64(d)); return nil }
	ctx := context.Background()
	claims := func() map[string]any {
		return is.claims(map[string]any{"exp": time.Unix(0, clock.Load()).Add(time.Hour).Unix()})
	}
	if _, err := v.Verify(ctx, is.token(t, claims())); err != nil {
		t.Fatal(err)
	}
	is.rotate("k2") // at once: the token waits for the next fetch allowed
	if _, err := v.Verify(ctx, is.token(t, claims())); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n := is.jwksCalls.Load(); n != 2 {
		t.Errorf("%d fetches of the keys, want 2", n)
	}
	// Forged tokens naming unknown keys: one fetch each, but no more than
	// one a MinKeyRefetch; a bad signature by a known key fetches nothing.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	start := clock.Load()
	for i := range 20 {
		v.Verify(ctx, sign(t, &jose.JSONWebKey{Key: ec, KeyID: "forged" + string(rune('a'+i)), Algorithm: "ES256"}, claims()))
	}
	other := testkeys.Next()
	for range 20 {
		v.Verify(ctx, sign(t, &jose.JSONWebKey{Key: other, KeyID: "k2", Algorithm: "RS256"}, claims()))
	}
	if n, took := is.jwksCalls.Load()-2, time.Duration(clock.Load()-start); n != 20 || took < 19*MinKeyRefetch {
		t.Errorf("40 forged tokens fetched the keys %d times in %s, want 20 (one a forged key id), at most one a %s", n, took, MinKeyRefetch)
	}
	// The issuer withdraws k1 and k2 for k3: a token of k2 verifies until
	// the keys are older than jwks_refresh, then not.
	long := is.claims(map[string]any{"exp": time.Unix(0, clock.Load()).Add(3 * time.Hour).Unix()})
	old := is.token(t, long)
	is.rotate("k3", true)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Errorf("before jwks_refresh: %v", err)
	}
	clock.Add(int64(time.Hour + time.Second))
	var te *TokenError
	if _, err := v.Verify(ctx, old); !errors.As(err, &te) || !strings.Contains(te.Description, "unknown key") {
		t.Errorf("a withdrawn key after jwks_refresh: %v", err)
	}
	if _, err := v.Verify(ctx, is.token(t, long)); err != nil {
		t.Errorf("token of k3: %v", err)
	}
}

// An issuer that cannot be reached is the hub's trouble (ErrUnavailable),
// asked again at most once every MinRefetch; the identity a token gives
// is bounded, whatever size its claims.
func TestUnavailableAndBounds(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	calls := atomic.Int64{}
	dead.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1); http.NotFound(w, r) })
	defer dead.Close()
	v := NewVerifier(config.HTTPAuth{Issuer: dead.URL + "/", Audience: audience}, nil, nil, nil)
	for range 5 {
		if _, err := v.Verify(context.Background(), "a.b.c"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("dead issuer: %v", err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("the dead issuer was asked %d times, want one discovery (its two well-known URLs)", calls.Load())
	}

	is := newIssuer(t)
	v = newTestVerifier(is, config.HTTPAuth{Profiles: []config.AuthProfile{{Claim: "groups", Value: strings.Repeat("g", 300)[:MaxText], Profile: "p"}, {Claim: "groups", Value: "nope", Profile: "q"}}})
	many := make([]string, 1000)
	for i := range many {
		many[i] = strings.Repeat("g", 300)
	}
	many[5] = strings.Repeat("g", MaxText) // the one an entry names, exactly
	id, err := v.Verify(context.Background(), is.token(t, is.claims(map[string]any{"sub": strings.Repeat("s", 5000), "name": "Eve\nforged line\x00" + strings.Repeat("é", 300), "groups": many})))
	if err != nil {
		t.Fatal(err)
	}
	if len(id.Subject) > MaxText || len(id.Name) > MaxText || len(id.Groups) != MaxValues || len(id.Groups[0]) > MaxText || strings.ContainsAny(id.Name, "\n\x00") {
		t.Errorf("unbounded identity: subject %d, name %q, %d groups", len(id.Subject), id.Name, len(id.Groups))
	}
	if len(id.Claims) != 1 || len(id.Claims["groups"]) != 1 || !id.Has("groups", strings.Repeat("g", MaxText)) {
		t.Errorf("the claims kept for profiles: %d claims, %d values; want the one value an entry names", len(id.Claims), len(id.Claims["groups"]))
	}
}
