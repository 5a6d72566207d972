package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// introspectingIssuer is an authorization server with an RFC 7662
// introspection endpoint at /introspect that the client hub:hub-secret
// may use: tokens are active as set in active (their responses), any
// other is inactive. mode "down" answers 500, "junk" not JSON.
type introspectingIssuer struct {
	srv   *httptest.Server
	calls atomic.Int64
	delay time.Duration

	mu       sync.Mutex
	active   map[string]map[string]any
	mode     string
	noInMeta bool // the metadata names no introspection_endpoint
}

func newIntrospectingIssuer(t testing.TB) *introspectingIssuer {
	is := &introspectingIssuer{active: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		md := map[string]any{"issuer": is.srv.URL + "/", "token_endpoint": is.srv.URL + "/token"}
		if is.mu.Lock(); !is.noInMeta {
			md["introspection_endpoint"] = is.srv.URL + "/introspect"
		}
		is.mu.Unlock()
		json.NewEncoder(w).Encode(md)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		is.calls.Add(1)
		time.Sleep(is.delay)
		if id, secret, ok := r.BasicAuth(); r.Method != http.MethodPost || !ok || id != "hub" || secret != "hub-secret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		resp, mode := is.active[r.PostFormValue("token")], is.mode
		is.mu.Unlock()
		switch mode {
		case "down":
			http.Error(w, "down", http.StatusInternalServerError)
			return
		case "junk":
			w.Write([]byte("<html>"))
			return
		}
		if resp == nil {
			resp = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(resp)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// issue makes token active with the introspection response of a token
// for the hub of sub, over the defaults.
func (is *introspectingIssuer) issue(token, sub string, over map[string]any) {
	resp := map[string]any{"active": true, "sub": sub, "aud": []string{audience}, "iss": is.srv.URL + "/",
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "openid mcp", "token_type": "Bearer", "token_use": "access_token",
		"ext": map[string]any{"name": strings.ToUpper(sub[:1]) + sub[1:], "groups": []string{sub + "-team"}}}
	for k, v := range over {
		if v == nil {
			delete(resp, k)
		} else {
			resp[k] = v
		}
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.active[token] = resp
}

func (is *introspectingIssuer) revoke(token string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	delete(is.active, token)
}

func (is *introspectingIssuer) setMode(m string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.mode = m
}

// clock is a test's clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newIntrospectingVerifier(is *introspectingIssuer, in config.AuthIntrospection, now func() time.Time, scopes ...string) *Verifier {
	if in.ClientID == "" {
		in.ClientID, in.ClientSecret = "hub", "hub-secret"
	}
	auth := config.HTTPAuth{Issuer: is.srv.URL + "/", Audience: audience, Scopes: scopes, Introspection: &in,
		Claims:   config.AuthClaims{Subject: "sub", Name: "ext.name", Groups: "ext.groups"},
		Profiles: []config.AuthProfile{{Claim: "ext.groups", Value: "alice-team", Profile: "admin"}}}
	return NewVerifier(auth, nil, is.srv.Client(), now)
}

// Opaque tokens are checked by introspection: an active one for the hub
// gives its caller's identity, read from the response as from a JWT's
// claims (ext.groups for profiles); every other is refused with the
// reason a client is told.
func TestIntrospection(t *testing.T) {
	is := newIntrospectingIssuer(t)
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil)
	ctx := context.Background()
	is.issue("ory_at_alice.sig", "alice", nil)
	is.issue("ory_at_bob.sig", "bob", map[string]any{"aud": audience})
	// An opaque token with two dots is not taken for a JWT.
	is.issue("opaque.with.dots", "carol", nil)
	for _, c := range []struct{ token, key, name, group string }{
		{"ory_at_alice.sig", "jwt:alice", "Alice", "alice-team"},
		{"ory_at_bob.sig", "jwt:bob", "Bob", "bob-team"},
		{"opaque.with.dots", "jwt:carol", "Carol", "carol-team"},
	} {
		id, err := v.Verify(ctx, c.token)
		if err != nil {
			t.Fatalf("%s: %v", c.token, err)
		}
		if id.Kind != KindJWT || id.Key() != c.key || id.Name != c.name || strings.Join(id.Groups, ",") != c.group {
			t.Errorf("%s: identity %+v", c.token, id)
		}
		if admin, err := ChooseProfile(&v.auth, id, ""); err != nil || (admin == "admin") != (c.key == "jwt:alice") {
			t.Errorf("%s: profile %q %v", c.token, admin, err)
		}
	}
	for _, c := range []struct {
		name   string
		over   map[string]any
		want   string
		signed bool
	}{
		{"unknown", nil, "not active", false},
		{"another audience", map[string]any{"aud": []string{"https://other.example/mcp"}}, "not for this resource", true},
		{"no audience", map[string]any{"aud": nil}, "not for this resource", true},
		{"a refresh token", map[string]any{"token_use": "refresh_token"}, "not an access token", true},
		{"a refresh token by type", map[string]any{"token_use": nil, "token_type": "refresh_token"}, "not an access token", true},
		{"expired", map[string]any{"exp": time.Now().Add(-time.Second).Unix()}, "expired", true},
		{"not yet valid", map[string]any{"nbf": time.Now().Add(2 * time.Minute).Unix()}, "not valid yet", true},
		{"another issuer", map[string]any{"iss": "https://evil.example/"}, "another issuer", true},
		{"no subject", map[string]any{"sub": ""}, "no subject", true},
	} {
		token := "tok-" + strings.ReplaceAll(c.name, " ", "-")
		if c.over != nil {
			is.issue(token, "mallory", c.over)
		}
		_, err := v.Verify(ctx, token)
		var te *TokenError
		if !errors.As(err, &te) || !strings.Contains(te.Description, c.want) || te.Signed != c.signed {
			t.Errorf("%s: %v (%+v), want a TokenError saying %q, signed %v", c.name, err, te, c.want, c.signed)
		}
	}
	// Scopes: the scope member, space-separated.
	vs := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil, "mcp", "admin")
	var se *ScopeError
	if _, err := vs.Verify(ctx, "ory_at_alice.sig"); !errors.As(err, &se) {
		t.Errorf("a token without the scope admin: %v", err)
	}
	if _, err := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil, "mcp").Verify(ctx, "ory_at_alice.sig"); err != nil {
		t.Errorf("a token with the scope mcp: %v", err)
	}
}

// The endpoint is the issuer's metadata's introspection_endpoint when
// http.auth.introspection names none; with none there either, an opaque
// token is ErrUnavailable saying so. A JWT is still checked by the keys.
func TestIntrospectionDiscovered(t *testing.T) {
	is := newIntrospectingIssuer(t)
	is.issue("ory_at_alice.sig", "alice", nil)
	v := newIntrospectingVerifier(is, config.AuthIntrospection{}, nil)
	if id, err := v.Verify(context.Background(), "ory_at_alice.sig"); err != nil || id.Subject != "alice" {
		t.Fatalf("%+v %v", id, err)
	}
	// Its metadata names no jwks_uri: a JWT is introspected too.
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJkYXZlIn0.c2ln"
	is.issue(jwt, "dave", nil)
	if id, err := v.Verify(context.Background(), jwt); err != nil || id.Subject != "dave" {
		t.Errorf("a JWT of an issuer without keys: %+v %v", id, err)
	}
	if _, err := NewVerifier(config.HTTPAuth{Issuer: is.srv.URL + "/", Audience: audience}, nil, is.srv.Client(), nil).Verify(context.Background(), jwt); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no jwks_uri") {
		t.Errorf("a JWT of an issuer without keys, no introspection: %v", err)
	}
	is.mu.Lock()
	is.noInMeta = true
	is.mu.Unlock()
	v = newIntrospectingVerifier(is, config.AuthIntrospection{}, nil)
	if _, err := v.Verify(context.Background(), "ory_at_alice.sig"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "names no introspection_endpoint") {
		t.Errorf("no endpoint: %v", err)
	}

	// A JWT, with introspection on, is verified by the keys, never sent.
	jw := newIssuer(t)
	auth := config.HTTPAuth{Issuer: jw.url(), Audience: audience, Claims: config.AuthClaims{Subject: "sub"},
		Introspection: &config.AuthIntrospection{URL: is.srv.URL + "/introspect", ClientID: "hub", ClientSecret: "hub-secret"}}
	before := is.calls.Load()
	if id, err := NewVerifier(auth, nil, jw.srv.Client(), nil).Verify(context.Background(), jw.token(t, jw.claims(nil))); err != nil || id.Subject != "alice" {
		t.Errorf("a JWT with introspection on: %+v %v", id, err)
	}
	if is.calls.Load() != before {
		t.Error("a JWT was introspected")
	}
}

// An answer is kept for cache_ttl at most and never past the token's
// exp: a busy client costs one introspection, callers with one token at
// once share it, a revoked token works until its answer expires and not
// after, and a refused token is not asked about again either.
func TestIntrospectionCache(t *testing.T) {
	is := newIntrospectingIssuer(t)
	clk := &clock{t: time.Now()}
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect", CacheTTL: 5 * time.Second}, clk.now)
	ctx := context.Background()
	is.issue("alice-token", "alice", nil)
	for range 20 {
		if _, err := v.Verify(ctx, "alice-token"); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.calls.Load(); n != 1 {
		t.Errorf("20 calls with one token introspected %d times, want once", n)
	}
	is.revoke("alice-token")
	clk.add(4 * time.Second)
	if _, err := v.Verify(ctx, "alice-token"); err != nil {
		t.Errorf("revoked, within the TTL: %v (the answer kept)", err)
	}
	clk.add(time.Second)
	var te *TokenError
	if _, err := v.Verify(ctx, "alice-token"); !errors.As(err, &te) || !strings.Contains(te.Description, "not active") {
		t.Errorf("revoked, after the TTL: %v", err)
	}
	n := is.calls.Load()
	v.Verify(ctx, "alice-token")
	if is.calls.Load() != n {
		t.Error("a refused token was introspected again within the TTL")
	}

	// Never past exp: a token seen active that expires in 2s is refused
	// then as expired, without asking, and not as a guess (Signed: it
	// does not count against the address).
	is.issue("short", "bob", map[string]any{"exp": clk.now().Add(2 * time.Second).Unix()})
	if _, err := v.Verify(ctx, "short"); err != nil {
		t.Fatal(err)
	}
	clk.add(2 * time.Second)
	n = is.calls.Load()
	if _, err := v.Verify(ctx, "short"); !errors.As(err, &te) || !strings.Contains(te.Description, "expired") || !te.Signed || is.calls.Load() != n {
		t.Errorf("past exp: %v, %d introspections, want expired (signed) and none", err, is.calls.Load()-n)
	}
	// A token seen active whose answer expired before its exp is asked
	// about again (it may have been revoked).
	is.issue("long", "bob", nil)
	v.Verify(ctx, "long")
	clk.add(5 * time.Second)
	n = is.calls.Load()
	if _, err := v.Verify(ctx, "long"); err != nil || is.calls.Load() != n+1 {
		t.Errorf("after the TTL, before exp: %v, %d introspections, want 1", err, is.calls.Load()-n)
	}

	// Callers with one token at once: one request.
	is.delay = 100 * time.Millisecond
	is.issue("carol-token", "carol", nil)
	n = is.calls.Load()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 16 {
		wg.Go(func() {
			if _, err := v.Verify(ctx, "carol-token"); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 || is.calls.Load() != n+1 {
		t.Errorf("16 callers at once: %d failed, %d introspections, want 0 and 1", failed.Load(), is.calls.Load()-n)
	}
}

// The cache holds MaxIntrospectionCache answers at most, whatever the
// number of tokens.
func TestIntrospectionCacheBounded(t *testing.T) {
	is := newIntrospectingIssuer(t)
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil)
	if v.in.max != MaxIntrospectionCache {
		t.Fatalf("%d answers kept at most, want %d", v.in.max, MaxIntrospectionCache)
	}
	// A smaller room is filled and passed the same way, for a sixteenth
	// of the requests.
	v.in.max = 64
	is.issue("alice-token", "alice", nil)
	for i := range v.in.max + 50 {
		v.Verify(context.Background(), fmt.Sprintf("guess-%d", i))
	}
	v.Verify(context.Background(), "alice-token")
	v.in.mu.Lock()
	n := len(v.in.cache)
	v.in.mu.Unlock()
	if n > v.in.max {
		t.Errorf("%d answers kept, want at most %d", n, v.in.max)
	}
	if _, err := v.Verify(context.Background(), "alice-token"); err != nil {
		t.Error(err)
	}
}

// An introspection endpoint that is down, answers an error (the hub's
// client refused, a server error) or junk is the hub's trouble:
// ErrUnavailable, never a token refused, and nothing is kept, so the
// token works as soon as the endpoint is back.
func TestIntrospectionUnavailable(t *testing.T) {
	is := newIntrospectingIssuer(t)
	is.issue("alice-token", "alice", nil)
	ctx := context.Background()
	for _, mode := range []string{"down", "junk"} {
		v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil)
		is.setMode(mode)
		if _, err := v.Verify(ctx, "alice-token"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", mode, err)
		}
		is.setMode("")
		if _, err := v.Verify(ctx, "alice-token"); err != nil {
			t.Errorf("%s, then back: %v", mode, err)
		}
	}
	wrong := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect", ClientID: "hub", ClientSecret: "wrong"}, nil)
	if _, err := wrong.Verify(ctx, "alice-token"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "401") {
		t.Errorf("the hub's client refused: %v", err)
	}
	// Down: a listener kept (its port cannot go to another server
	// meanwhile) whose every connection ends with no answer.
	dead := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer dead.Close()
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: dead.URL + "/introspect"}, nil)
	if _, err := v.Verify(ctx, "alice-token"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("endpoint down: %v", err)
	}
	// A redirect is not followed: the token goes nowhere else.
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"active": true})
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/introspect", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	v = newIntrospectingVerifier(is, config.AuthIntrospection{URL: redirecting.URL + "/introspect"}, nil)
	if _, err := v.Verify(ctx, "alice-token"); !errors.Is(err, ErrUnavailable) || elsewhere.Load() != 0 {
		t.Errorf("a redirecting endpoint: %v, the token sent elsewhere %d times", err, elsewhere.Load())
	}
	// Without introspection an opaque token is refused as before.
	plain := NewVerifier(config.HTTPAuth{Issuer: is.srv.URL + "/", Audience: audience}, nil, is.srv.Client(), nil)
	var te *TokenError
	if _, err := plain.Verify(ctx, "alice-token"); !errors.As(err, &te) || te.Description != "not a JWT" {
		t.Errorf("no introspection: %v", err)
	}
}

// An outage of the endpoint is logged once when it begins and once when
// it ends, not per token.
func TestIntrospectionOutageLoggedOnce(t *testing.T) {
	is := newIntrospectingIssuer(t)
	is.issue("alice-token", "alice", nil)
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), nil))
	in := config.AuthIntrospection{URL: is.srv.URL + "/introspect", ClientID: "hub", ClientSecret: "hub-secret"}
	v := NewVerifier(config.HTTPAuth{Issuer: is.srv.URL + "/", Audience: audience, Claims: config.AuthClaims{Subject: "sub"}, Introspection: &in}, logger, is.srv.Client(), nil)
	is.setMode("down")
	for i := range 5 {
		v.Verify(context.Background(), fmt.Sprint("token-", i))
	}
	is.setMode("")
	for range 3 {
		if _, err := v.Verify(context.Background(), "alice-token"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if w, i := strings.Count(logs.String(), "cannot introspect tokens"), strings.Count(logs.String(), "introspecting tokens again"); w != 1 || i != 1 {
		t.Errorf("logged %d warnings and %d recoveries, want 1 and 1:\n%s", w, i, logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
