package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// TestPerUserSignInWithHydra: two users of an identity provider nobody
// here wrote, ory/hydra, call a server marked auth: per-user (behind the
// test authorization server) through the built hub, which is hydra's
// resource server (their JWTs) and, by http.auth.client_id, hydra's
// OpenID Connect client as well, to confirm who opens a sign-in link. A
// person signs in at hydra through its login and consent app as a
// browser does. Bob opening alice's link is refused 403 (hydra signs him
// in as bob, not alice) and nothing is signed in; alice opening her own
// signs her in, and her calls run with her token; bob's call then asks
// bob to sign in and never runs with alice's token; once bob signed in
// himself, his calls carry his own.
func TestPerUserSignInWithHydra(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	bin, hub, audience := hydraAndHub(t)
	hubURL := hub.URL
	h := startHydraJWT(t, bin, map[string]jwtUser{"alice": {name: "Alice"}, "bob": {name: "Bob"}}, "")
	h.addTeamApp(t, audience)
	// The hub's own client, confidential, redirected to its /auth/confirm.
	h.admin(t, http.MethodPost, "/admin/clients", map[string]any{
		"client_id": "hub-sign-in", "client_secret": "hub-sign-in-secret-0123", "redirect_uris": []string{hubURL + "/auth/confirm"},
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "scope": "openid",
		"token_endpoint_auth_method": "client_secret_basic",
	}, nil)

	// The per-user server, and the hub's own sign-in to it (for the
	// lists), made by `auth login`; the hub's environment is given to
	// its processes, not set in the test's, so the test runs beside others.
	env := []string{vault.EnvKey + "=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, vault.KeySize)),
		"HUB_SIGN_IN_SECRET=hub-sign-in-secret-0123"}
	a, calls := whoamiUpstream(t)
	stateDir := t.TempDir()
	cfg := fmt.Sprintf(`mode: flat
state_dir: %q
settings: { call_timeout: 10s }
http:
  auth:
    issuer: %s/
    audience: %s
    client_id: hub-sign-in
    client_secret: ${HUB_SIGN_IN_SECRET}
groups:
  docs:
    description: our documents, each person as themselves
    url: %s/mcp
    transport: streamable-http
    auth: per-user
`, stateDir, h.public, audience, a.URL)
	cfgPath := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hydraLogin(t, append(os.Environ(), env...), cfgPath, "docs")
	a.Lock()
	hubToken := a.Access // the one token issued so far
	a.Unlock()
	base, stderr := startHTTPHubEnv(t, env, cfg)
	hub.behind(base)
	users := map[string]*bearerSession{}
	for _, u := range []string{"alice", "bob"} {
		users[u] = &bearerSession{t: t, url: audience, token: h.teamToken(t, u, audience)}
		if code, body := users[u].initialize(); code != http.StatusOK {
			t.Fatalf("%s's initialize: %d %s\n%s", u, code, body, stderr.String())
		}
	}
	await.Costly(t, 15*time.Second, "the per-user server's tools", func() bool {
		_, got := users["alice"].post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	call := func(u string) string {
		_, got := users[u].post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"` + u + `"}}}`)
		return strings.ReplaceAll(got, `\u0026`, "&")
	}
	linkOf := func(u string) string {
		t.Helper()
		got := call(u)
		link := hubSignInLink.FindString(got)
		if !strings.Contains(got, `"code":-32042`) || !strings.HasPrefix(link, hubURL+"/auth/start?") {
			t.Fatalf("%s's call before signing in: %s; want -32042 with a link to the hub's /auth/start", u, got)
		}
		return link
	}

	// Bob opens alice's link (it leaked): hydra signs him in as bob, and
	// the hub refuses.
	aliceLink := linkOf("alice")
	if code, body := openSignIn(t, "bob", aliceLink); code != http.StatusForbidden || !strings.Contains(body, "This sign-in link is not yours") ||
		!strings.Contains(body, "signs <b>Alice</b> in to docs") || !strings.Contains(body, "as <b>bob</b>") {
		t.Fatalf("bob opened alice's link: %d %s\n%s", code, body, stderr.String())
	}
	// The page is answered as the warning is logged; stderr is read by
	// another process's pipe: the line may come a moment after.
	await.Costly(t, 5*time.Second, "the hub to log the refusal", func() bool {
		return strings.Contains(stderr.String(), "a link was opened by another user than its own")
	})
	if got := call("alice"); !strings.Contains(got, `"code":-32042`) {
		t.Fatalf("alice's call after bob opened her link: %s; want -32042 (nothing signed in)", got)
	}
	// Alice opens her own link.
	if code, body := openSignIn(t, "alice", linkOf("alice")); code != http.StatusOK || !strings.Contains(body, "Alice is signed in to docs") {
		t.Fatalf("alice opened her own link: %d %s\n%s", code, body, stderr.String())
	}
	if got := call("alice"); !strings.Contains(got, "hello alice") {
		t.Fatalf("alice's call after signing in: %s", got)
	}
	// Bob's call asks bob, and never runs with alice's token.
	bobLink := linkOf("bob")
	if code, body := openSignIn(t, "alice", bobLink); code != http.StatusForbidden || !strings.Contains(body, "signs <b>Bob</b> in to docs") {
		t.Fatalf("alice opened bob's link: %d %s", code, body)
	}
	if code, body := openSignIn(t, "bob", linkOf("bob")); code != http.StatusOK || !strings.Contains(body, "Bob is signed in to docs") {
		t.Fatalf("bob opened his own link: %d %s", code, body)
	}
	if got := call("bob"); !strings.Contains(got, "hello bob") {
		t.Fatalf("bob's call after signing in: %s", got)
	}
	tokens := calls()
	if len(tokens["alice"]) != 1 || len(tokens["bob"]) != 1 {
		t.Fatalf("each user's calls should carry one token of their own: %v", tokens)
	}
	for tok := range tokens["bob"] {
		if tokens["alice"][tok] || tok == "Bearer "+hubToken {
			t.Errorf("bob's call carried alice's or the hub's token: %v", tokens)
		}
	}
}

var hubSignInLink = regexp.MustCompile(`http://[^ "\\]+/auth/start\?server=docs&state=[A-Za-z0-9_-]+`)

// whoamiUpstream is the test authorization server in front of an MCP
// server with one tool, whoami; calls are the tokens its calls carried,
// by the caller its arguments name.
func whoamiUpstream(t *testing.T) (*authtest.Server, func() map[string]map[string]bool) {
	a := authtest.NewServer(t)
	a.KeepTokens = true
	s := mcpserver.NewMCPServer("protected", "1")
	s.AddTool(mcp.NewTool("whoami", mcp.WithString("who")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello " + req.GetString("who", "")), nil
	})
	inner := mcpserver.NewStreamableHTTPServer(s)
	var mu sync.Mutex
	seen := map[string]map[string]bool{}
	a.Resource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Arguments struct {
					Who string `json:"who"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			mu.Lock()
			if seen[m.Params.Arguments.Who] == nil {
				seen[m.Params.Arguments.Who] = map[string]bool{}
			}
			seen[m.Params.Arguments.Who][r.Header.Get("Authorization")] = true
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	})
	return a, func() map[string]map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]map[string]bool{}
		for k, v := range seen {
			out[k] = map[string]bool{}
			for tok := range v {
				out[k][tok] = true
			}
		}
		return out
	}
}

var hubSignInForm = regexp.MustCompile(`<form method="post" action="/auth/start"><input type="hidden" name="server" value="([^"]*)"><input type="hidden" name="state" value="([^"]*)">`)

// openSignIn opens a sign-in link in a new browser at which person sits
// (hydra's login app signs in the person its X-Test-Person names), and
// presses the page's button: the status and body of the last page.
func openSignIn(t *testing.T, person, link string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: personTransport(person)}
	resp, err := browser.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(body)
	}
	m := hubSignInForm.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("no sign-in form in %s", body)
	}
	u, _ := url.Parse(link)
	origin := u.Scheme + "://" + u.Host
	req, _ := http.NewRequest(http.MethodPost, origin+"/auth/start",
		strings.NewReader(url.Values{"server": {html.UnescapeString(m[1])}, "state": {html.UnescapeString(m[2])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	if resp, err = browser.Do(req); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

type personTransport string

func (p personTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Person", string(p))
	return testClient.Transport.RoundTrip(r)
}
