package mcphttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A user's call the server refuses for want of a scope (403
// insufficient_scope) asks the user to sign in again (-32042, a link of
// their own), and that link asks for the wider scope: the call then goes
// through, though the server still takes the narrower token.
func TestPerUserSignInStepsUpTheScope(t *testing.T) {
	a, _, dir := savedUpstream(t)
	a.GrantScopes = true
	inner := a.Resource
	a.Resource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && !strings.Contains(a.ScopeOf(r.Header.Get("Authorization")), "mcp:write") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:read mcp:write"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
	yaml := flatFakeYAML(dir, "call_timeout: 5s", "    args: []\n") + fmt.Sprintf(`  docs:
    description: a protected server, each user signed in for themselves
    url: %s/mcp
    transport: streamable-http
    auth: per-user
`, a.URL)
	insp := inspect.New(inspect.Options{})
	t.Cleanup(func() { insp.Close() })
	h, mgr := runHub(t, yaml, insp)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	face := New(h, Options{Tokens: map[string]string{"alice": "alice-token-0123456789"}, Auth: cfg.HTTP.Auth, SignIns: mgr}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	alice := &bearerClient{t: t, url: ts.URL + "/mcp", token: "alice-token-0123456789"}
	if code := alice.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	await.For(t, 10*time.Second, "the per-user server's tools", func() bool {
		_, got := alice.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	call := func() string {
		_, got := alice.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"alice"}}}`)
		return strings.ReplaceAll(got, `\u0026`, "&")
	}
	signIn := func(step, got string) {
		t.Helper()
		link := signInLink.FindString(got)
		if !strings.Contains(got, `"code":-32042`) || link == "" {
			t.Fatalf("alice's call %s: %s; want -32042 with a sign-in link", step, got)
		}
		if code, body := newBrowser("someone").open(t, link); code != http.StatusOK || !strings.Contains(body, "alice is signed in to docs") {
			t.Fatalf("alice's sign-in %s: %d %s", step, code, body)
		}
	}
	signIn("before signing in", call())
	if got := a.Authorize.Get("scope"); got != "mcp:read" {
		t.Fatalf("the first sign-in asked for %q, want mcp:read", got)
	}
	got := call()
	if !strings.Contains(got, "needs scope mcp:read mcp:write") {
		t.Errorf("the refused call says %s; want it to name the scopes", got)
	}
	signIn("refused for want of a scope", got)
	if got := a.Authorize.Get("scope"); got != "mcp:read mcp:write" {
		t.Fatalf("the sign-in after the refusal asked for %q, want mcp:read mcp:write", got)
	}
	if got := call(); !strings.Contains(got, "hello alice") {
		t.Fatalf("alice's call after signing in again: %s", got)
	}
}
