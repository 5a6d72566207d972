package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/testkeys"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// testIssuer is a local authorization server: discovery and JWKS, and
// tokens signed by its key.
type testIssuer struct {
	srv *httptest.Server
	key jose.JSONWebKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	is := &testIssuer{key: jose.JSONWebKey{Key: testkeys.Next(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{is.key.Public()}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

const testAudience = "https://hub.example/mcp"

// token is a token of the issuer for sub, with groups, for aud.
func (is *testIssuer) token(t *testing.T, sub, name, aud string, groups ...string) string {
	return is.tokenWith(t, map[string]any{"sub": sub, "name": name, "aud": aud, "groups": groups})
}

// tokenWith is a token of the issuer with claims, besides iss, exp and iat.
func (is *testIssuer) tokenWith(t *testing.T, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	claims["iss"], claims["exp"], claims["iat"] = is.srv.URL, time.Now().Add(time.Hour).Unix(), time.Now().Unix()
	b, _ := json.Marshal(claims)
	obj, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := obj.CompactSerialize()
	return out
}

// identityHub serves a hub over HTTP whose callers sign in with is's
// tokens: admins see the profile admin (flat), others reader (dynamic);
// the static token "static-token-0123456789" is the credential ci. Calls
// to echo are limited to 1 a minute per user. It returns the face's URL
// and the audit trail's path.
func identityHub(t *testing.T, is *testIssuer) (string, string, *server.Hub) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	yaml := fmt.Sprintf(`mode: flat
state_dir: %q
audit: { path: %q }
settings: { call_timeout: 5s }
profiles:
  admin: { groups: [f], mode: flat }
  reader: { groups: [f], mode: dynamic }
http:
  auth:
    issuer: %s
    audience: %s
    profiles:
      - { claim: groups, value: admins, profile: admin }
    default_profile: reader
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: echo-per-user, action: allow, tool: echo, rate: 1/minute, per: user }
`, dir, auditPath, is.srv.URL, testAudience, fakeBin)
	h, _ := runHub(t, yaml, nil)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	face := New(h, Options{Tokens: map[string]string{"ci": "static-token-0123456789"}, Auth: cfg.HTTP.Auth}, testLogger())
	face.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metrics") }))
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	return ts.URL, auditPath, h
}

// bearerClient is an MCP client over HTTP with a bearer token.
type bearerClient struct {
	t              *testing.T
	url            string // of the endpoint, /mcp or /mcp/p/NAME
	token, session string
}

func (c *bearerClient) post(body string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.session != "" {
		req.Header.Set(headerSessionID, c.session)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get(headerSessionID); id != "" {
		c.session = id
	}
	return resp, string(b)
}

func (c *bearerClient) initialize() int {
	resp, _ := c.post(initializeMsg)
	if resp.StatusCode == http.StatusOK {
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return resp.StatusCode
}

// Callers sign in with JWTs of the issuer: each sees the profile its
// claims choose, its calls are its own in the audit trail and in its rate
// limit, and the hub's sessions list names it; a URL naming a profile the
// claims do not allow is 403; a static token is its own caller beside.
func TestCallersWithIdentities(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, auditPath, h := identityHub(t, is)
	alice := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, "alice", "Alice", testAudience, "admins")}
	bob := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, "bob", "Bob", testAudience, "docs")}
	for _, c := range []*bearerClient{alice, bob} {
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
	}
	_, aliceTools := alice.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	_, bobTools := bob.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(aliceTools, `"f__echo"`) || strings.Contains(aliceTools, "call_dynamic_tool") {
		t.Errorf("alice (admins) should see the flat profile admin: %s", aliceTools)
	}
	if !strings.Contains(bobTools, "call_dynamic_tool") || strings.Contains(bobTools, `"f__echo"`) {
		t.Errorf("bob should see the dynamic profile reader: %s", bobTools)
	}
	// Bob may not take the admin profile by URL; Alice may narrow to reader
	// only if an entry matching her names it: none does.
	for _, c := range []*bearerClient{{t: t, url: base + "/mcp/p/admin", token: bob.token}, {t: t, url: base + "/mcp/p/reader", token: alice.token}} {
		if code := c.initialize(); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.url, code)
		}
	}
	// The rate limit is per user: Alice's second session shares her count,
	// Bob has his own.
	echo := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`
	if _, got := alice.post(echo); !strings.Contains(got, `"text":"hi"`) {
		t.Fatalf("alice's first call: %s", got)
	}
	alice2 := &bearerClient{t: t, url: base + "/mcp", token: alice.token}
	alice2.initialize()
	if _, got := alice2.post(echo); !strings.Contains(got, `"code":-32001`) {
		t.Errorf("alice's second call, in another session: %s", got)
	}
	bobEcho := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"hi"}}}}`
	if _, got := bob.post(bobEcho); !strings.Contains(got, `hi`) || strings.Contains(got, "-32001") {
		t.Errorf("bob's first call: %s", got)
	}
	// A static token is a caller of its own.
	ci := &bearerClient{t: t, url: base + "/mcp", token: "static-token-0123456789"}
	if code := ci.initialize(); code != http.StatusOK {
		t.Fatalf("static token: %d", code)
	}
	if _, got := ci.post(echo); !strings.Contains(got, `"text":"hi"`) {
		t.Errorf("static token's call: %s", got)
	}
	// /metrics is the operator's: a static token reads it, a signed-in
	// caller does not.
	for token, want := range map[string]int{ci.token: http.StatusOK, alice.token: http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics: %d, want %d", resp.StatusCode, want)
		}
	}
	// A session is its caller's: Bob cannot use Alice's.
	if resp, _ := (&bearerClient{t: t, url: base + "/mcp", token: bob.token, session: alice.session}).post(echo); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob with alice's session: %d, want 404", resp.StatusCode)
	}
	// The hub's sessions (the inspector's list, /metrics) name the callers.
	seen := map[string]string{}
	for _, s := range h.Sessions().Info() {
		if s.ID == alice.session || s.ID == bob.session || s.ID == ci.session {
			seen[s.User+"/"+s.Subject] = s.Profile
		}
	}
	if p, ok := seen["Alice/jwt:alice"]; !ok || p != "admin" || seen["Bob/jwt:bob"] != "reader" || len(seen) != 3 {
		t.Errorf("sessions: %v", seen)
	}
	var trail string
	await.For(t, 5*time.Second, "the audit lines", func() bool {
		b, _ := os.ReadFile(auditPath)
		trail = string(b)
		return strings.Count(trail, "\n") >= 4
	})
	for _, want := range []string{`"user":"Alice","subject":"jwt:alice"`, `"user":"Bob","subject":"jwt:bob"`, `"user":"ci","subject":"token:ci"`} {
		if !strings.Contains(trail, want) {
			t.Errorf("audit trail lacks %s:\n%s", want, trail)
		}
	}
}

// Without a valid token the hub answers 401 with WWW-Authenticate naming
// its protected resource metadata (MCP authorization, RFC 9728), and
// invalid_token when a token came; the metadata names the issuer.
func TestResourceServerChallenge(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, _, _ := identityHub(t, is)
	meta := `resource_metadata="https://hub.example/.well-known/oauth-protected-resource/mcp"`
	good := is.token(t, "alice", "Alice", testAudience, "admins")
	parts := strings.Split(good, ".")
	sig := []byte(parts[2])
	// Another letter of the base64url alphabet (a flipped bit may leave
	// it, and then the token is malformed, not badly signed).
	if sig[10] == 'A' {
		sig[10] = 'B'
	} else {
		sig[10] = 'A'
	}
	for _, c := range []struct{ name, token, want string }{
		{"no token", "", meta},
		{"another audience", is.token(t, "alice", "Alice", "https://other.example/mcp"), meta + `, error="invalid_token", error_description="the token is not for this resource (aud)"`},
		{"bad signature", parts[0] + "." + parts[1] + "." + string(sig), meta + `, error="invalid_token", error_description="the token's signature does not verify"`},
		{"not a JWT", "some-opaque-token", meta + `, error="invalid_token"`},
	} {
		c2 := &bearerClient{t: t, url: base + "/mcp", token: c.token}
		req, _ := http.NewRequest(http.MethodPost, c2.url, strings.NewReader(initializeMsg))
		req.Header.Set("Content-Type", "application/json")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(got, "Bearer "+c.want) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401, %q", c.name, resp.StatusCode, got, "Bearer "+c.want)
		}
		if c.token == "" && strings.Contains(resp.Header.Get("WWW-Authenticate"), "error=") {
			t.Errorf("%s: an error without a token", c.name)
		}
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := testClient.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || m.Resource != testAudience || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != is.srv.URL ||
			len(m.BearerMethods) != 1 || m.BearerMethods[0] != "header" {
			t.Errorf("%s: %d %+v", path, resp.StatusCode, m)
		}
	}
}

// A token the issuer signed but that is refused (for another audience,
// expired) is no guess: it does not count against the address, which a
// team behind one NAT shares; a forged one does.
func TestSignedTokensAreNoGuesses(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	g := httpguard.NewGuard(httpguard.GuardOptions{Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}, MaxAuthFailures: 2})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	try := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	other := is.token(t, "alice", "Alice", "https://other.example/mcp")
	for i := range 5 {
		if code := try(other); code != http.StatusUnauthorized {
			t.Fatalf("token for another audience, try %d: %d, want 401", i, code)
		}
	}
	if code := try(is.token(t, "alice", "Alice", testAudience)); code != http.StatusOK {
		t.Fatalf("a good token after 5 signed but refused: %d", code)
	}
	parts := strings.Split(other, ".")
	forged := parts[0] + "." + parts[1] + ".AAAA" + parts[2][4:]
	codes := []int{try(forged), try(forged), try(forged)}
	if codes[2] != http.StatusTooManyRequests {
		t.Errorf("forged tokens: %v, want 429 after 2", codes)
	}
}

// A 2026-07-28 request, which opens no session, and a legacy SSE session
// are in the profile their caller's claims choose too.
func TestIdentityWithoutSessionsAndOverLegacySSE(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, _, h := identityHub(t, is)
	bob := is.token(t, "bob", "Bob", testAudience, "docs")
	body := `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set("Authorization", "Bearer "+bob)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(got), "call_dynamic_tool") || strings.Contains(string(got), `"f__echo"`) {
		t.Errorf("bob's 2026-07-28 tools/list: %d %s, want the profile reader", resp.StatusCode, got)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	sreq.Header.Set("Accept", "text/event-stream")
	sreq.Header.Set("Authorization", "Bearer "+is.token(t, "alice", "Alice", testAudience, "admins"))
	sresp, err := testClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if sresp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sse with alice's token: %d", sresp.StatusCode)
	}
	await.For(t, 5*time.Second, "alice's legacy SSE session in the profile admin", func() bool {
		for _, s := range h.Sessions().Info() {
			if s.Transport == "sse" && s.Subject == "jwt:alice" && s.Profile == "admin" {
				return true
			}
		}
		return false
	})
}

// An issuer that cannot be reached is the hub's trouble: a JWT is
// answered 503 with Retry-After, not 401 (the client's token may be
// good), and counts nothing; static tokens go on working.
func TestIssuerDown(t *testing.T) {
	t.Parallel()
	// Down: a listener kept (its port cannot go to another server
	// meanwhile) whose every connection ends with no answer.
	down := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer down.Close()
	g := httpguard.NewGuard(httpguard.GuardOptions{Token: "static-token-0123456789", MaxAuthFailures: 1,
		Auth: &config.HTTPAuth{Issuer: down.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	try := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for range 3 {
		if w := try("aaa.bbb.ccc"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("a JWT with the issuer down: %d %q", w.Code, w.Header().Get("Retry-After"))
		}
	}
	if w := try("static-token-0123456789"); w.Code != http.StatusOK {
		t.Errorf("the static token with the issuer down: %d", w.Code)
	}
}

// With http.auth.scopes, a token without them is 403 insufficient_scope,
// saying which (RFC 6750 section 3.1); scope (a string) and scp (a list)
// both grant; the metadata lists them.
func TestRequiredScopes(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	g := httpguard.NewGuard(httpguard.GuardOptions{Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}, Scopes: []string{"mcp", "tools"}}})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, c := range []struct {
		name  string
		scope map[string]any
		want  int
	}{
		{"none", map[string]any{}, http.StatusForbidden},
		{"one of two", map[string]any{"scope": "mcp openid"}, http.StatusForbidden},
		{"scope", map[string]any{"scope": "openid tools mcp"}, http.StatusOK},
		{"scp", map[string]any{"scp": []string{"mcp", "tools"}}, http.StatusOK},
	} {
		claims := map[string]any{"sub": "alice", "aud": testAudience}
		for k, v := range c.scope {
			claims[k] = v
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+is.tokenWith(t, claims))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := w.Header().Get("WWW-Authenticate")
		if w.Code != c.want || (c.want == http.StatusForbidden && !strings.HasPrefix(got, `Bearer error="insufficient_scope", scope="mcp tools", resource_metadata="https://hub.example/.well-known/oauth-protected-resource/mcp"`)) {
			t.Errorf("%s: %d %q, want %d", c.name, w.Code, got, c.want)
		}
	}
	rec := httptest.NewRecorder()
	httpguard.ResourceMetadata(&config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Scopes: []string{"mcp", "tools"}}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if !strings.Contains(rec.Body.String(), `"scopes_supported":["mcp","tools"]`) {
		t.Errorf("metadata: %s", rec.Body.String())
	}
}
