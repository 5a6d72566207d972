package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// jwtTeamHub configures a hub (audit path, issuer, audience, command) as
// a resource server of hydra's JWTs, whose groups claim picks the profile.
const jwtTeamHub = `mode: flat
audit: { path: %q }
profiles:
  admin: { groups: [f], mode: flat }
  reader: { groups: [f], mode: dynamic }
http:
  auth:
    issuer: %s/
    audience: %s
    profiles:
      - { claim: groups, value: admins, profile: admin }
    default_profile: reader
groups:
  f: { description: fake, command: %q }
`

// TestCallersSignedInWithHydra serves the hub over HTTP as an OAuth 2.1
// resource server of an authorization server nobody here wrote, ory/hydra
// v2.3.0, issuing JWT access tokens (strategies.access_token: jwt) with
// the groups a login and consent app grants two users: each sees the
// profile their claims choose, their calls are theirs in the audit trail,
// a token for another audience and one with a bad signature are refused
// 401 with WWW-Authenticate naming the resource metadata and
// invalid_token, and after hydra's signing key is rotated a new token is
// accepted by the running hub.
func TestCallersSignedInWithHydra(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	bin, hub, audience := hydraAndHub(t)
	hubURL := hub.URL
	const other = "https://other.example/mcp"
	h := startHydraJWT(t, bin, map[string]jwtUser{
		"alice": {name: "Alice", groups: []string{"admins"}},
		"bob":   {name: "Bob", groups: []string{"docs"}},
	}, "")
	h.addTeamApp(t, audience, other)

	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	base, stderr := startHTTPHub(t, fmt.Sprintf(jwtTeamHub, auditPath, h.public, audience, fakeBin))
	hub.behind(base)

	alice := h.teamToken(t, "alice", audience)
	bob := h.teamToken(t, "bob", audience)
	if kid(t, alice) == "" || claimsOf(t, alice)["groups"] == nil {
		t.Fatalf("hydra's token is not a JWT with groups: %v", claimsOf(t, alice))
	}
	checkTeamCallers(t, audience, "token", alice, bob, auditPath, stderr)

	// Refused: a token for another resource, one with a bad signature.
	meta := `Bearer resource_metadata="` + hubURL + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	forOther := h.teamToken(t, "alice", other)
	parts := strings.Split(alice, ".")
	sig := []byte(parts[2])
	if i := len(sig) / 2; sig[i] == 'A' { // still base64url: one letter for another
		sig[i] = 'B'
	} else {
		sig[i] = 'A'
	}
	for name, token := range map[string]string{"another audience": forOther, "bad signature": parts[0] + "." + parts[1] + "." + string(sig)} {
		code, header := (&bearerSession{t: t, url: audience, token: token}).refused()
		if code != http.StatusUnauthorized || !strings.HasPrefix(header, meta) {
			t.Errorf("%s: %d %q, want 401 %q", name, code, header, meta)
		}
	}
	var m struct {
		Resource string   `json:"resource"`
		Servers  []string `json:"authorization_servers"`
	}
	getJSON(t, hubURL+"/.well-known/oauth-protected-resource/mcp", &m)
	if m.Resource != audience || len(m.Servers) != 1 || m.Servers[0] != h.public+"/" {
		t.Errorf("protected resource metadata: %+v", m)
	}

	// Hydra's signing key is rotated: the new key signs, and the running
	// hub fetches it when a token names it.
	h.rotateKey(t, "hydra.jwt.access-token", "rotated-key")
	rotated := h.teamToken(t, "bob", audience)
	if kid(t, rotated) == kid(t, bob) {
		t.Fatalf("hydra signs with the same key (%s) after the rotation", kid(t, rotated))
	}
	rc := &bearerSession{t: t, url: audience, token: rotated}
	if code, body := rc.initialize(); code != http.StatusOK {
		var jwks any
		getJSON(t, h.public+"/.well-known/jwks.json", &jwks)
		_, header := rc.refused()
		t.Fatalf("a token of the rotated key %s: %d %s (%s); hydra's keys: %v", kid(t, rotated), code, body, header, jwks)
	}
	if _, tools := rc.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(tools, "call_dynamic_tool") {
		t.Errorf("bob with the rotated key's token sees %s", tools)
	}
	if n := strings.Count(stderr.String(), "fetched the issuer's signing keys"); n != 2 {
		t.Errorf("the hub fetched hydra's keys %d times, want twice: at the first token and at the rotated key's", n)
	}
}

// jwtUser is what the consent app grants a user: its name and groups go
// into the access token (allowed as top-level claims).
type jwtUser struct {
	name   string
	groups []string
}

// startHydraJWT runs hydra as startHydra does, issuing JWT access tokens,
// with a login app that signs in the user the authorization request
// names by login_hint, or the person at the browser (X-Test-Person),
// ("carol" when it names none), and a consent app
// that puts its name and groups into the access token, and grants the
// audience requested, or audience when set (for a client that asks by
// RFC 8707's resource, which hydra does not read: the consent app grants
// the hub's audience, as an operator's would).
func startHydraJWT(t *testing.T, bin string, users map[string]jwtUser, audience string) *hydra {
	return startHydraTokens(t, bin, users, audience, "jwt")
}

// startHydraTokens is startHydraJWT with hydra's access token strategy
// strategy: jwt, or opaque (hydra's default, checked by introspection).
func startHydraTokens(t *testing.T, bin string, users map[string]jwtUser, audience, strategy string) *hydra {
	h := &hydra{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var next struct {
			RedirectTo string `json:"redirect_to"`
		}
		switch r.URL.Path {
		case "/login":
			ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
			var req struct {
				OIDC struct {
					LoginHint string `json:"login_hint"`
				} `json:"oidc_context"`
			}
			h.admin(t, http.MethodGet, "/admin/oauth2/auth/requests/login?login_challenge="+ch, nil, &req)
			user := req.OIDC.LoginHint
			if p := r.Header.Get("X-Test-Person"); p != "" {
				user = p // the person at the browser (hydra_peruser_test.go)
			}
			if user == "" {
				user = "carol"
			}
			h.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch, map[string]any{"subject": user}, &next)
		case "/consent":
			ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
			var req struct {
				Subject  string   `json:"subject"`
				Scope    []string `json:"requested_scope"`
				Audience []string `json:"requested_access_token_audience"`
			}
			h.admin(t, http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil, &req)
			u := users[req.Subject]
			if audience != "" {
				req.Audience = []string{audience}
			}
			h.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch,
				map[string]any{"grant_scope": req.Scope, "grant_access_token_audience": req.Audience,
					"session": map[string]any{"access_token": map[string]any{"name": u.name, "groups": u.groups}}}, &next)
		default:
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, next.RedirectTo, http.StatusFound)
	}))
	t.Cleanup(app.Close)
	h.run(t, bin, func(publicHost, adminHost string) string {
		return fmt.Sprintf(`dsn: memory
serve:
  public: { host: %q }
  admin: { host: %q }
urls:
  self: { issuer: %s/ }
  login: %s/login
  consent: %s/consent
secrets: { system: [a-system-secret-for-the-test-only] }
oauth2:
  allowed_top_level_claims: [name, groups]
  mirror_top_level_claims: false
oidc:
  dynamic_client_registration: { enabled: true }
webfinger:
  oidc_discovery: { client_registration_url: %s/oauth2/register }
log: { level: warn }
`, publicHost, adminHost, h.public, app.URL, app.URL, h.public)
	}, "STRATEGIES_ACCESS_TOKEN="+strategy) // by environment, as an operator would set it
	return h
}

// hydraAndHub skips the test in -short mode; else it builds hydra (bin)
// and starts the front the hub will be reached at (its audience is the
// MCP endpoint there): the hub picks its own port, and the test puts it
// behind the front once it serves (hub.behind).
func hydraAndHub(t *testing.T) (bin string, hub *front, audience string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs ory/hydra")
	}
	bin = buildHydra(t)
	hub = startFront(t)
	return bin, hub, hub.URL + "/mcp"
}

// teamAppRedirect is the redirect of team-app, the MCP clients' app the
// hydra tests register: never reached, the browser stops at it.
const teamAppRedirect = "http://127.0.0.1:1/callback"

// addTeamApp registers team-app at hydra, confidential, for audiences.
func (h *hydra) addTeamApp(t *testing.T, audiences ...string) {
	t.Helper()
	h.admin(t, http.MethodPost, "/admin/clients", map[string]any{
		"client_id": "team-app", "client_secret": "team-app-secret-0123", "redirect_uris": []string{teamAppRedirect},
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "scope": "openid",
		"audience": audiences, "token_endpoint_auth_method": "client_secret_post",
	}, nil)
}

// teamToken signs user in through team-app and returns the access token
// for audience.
func (h *hydra) teamToken(t *testing.T, user, audience string) string {
	t.Helper()
	return h.signIn(t, "team-app", "team-app-secret-0123", teamAppRedirect, user, audience)
}

// checkTeamCallers initializes a session at audience for alice (an admin)
// and bob (not) with their tokens (kind: "token", "opaque token"), and
// checks that each sees the profile their claims choose (admin, flat;
// reader, dynamic), that their calls succeed and that the audit trail at
// auditPath names them. It returns their sessions.
func checkTeamCallers(t *testing.T, audience, kind, alice, bob, auditPath string, stderr *lockedBuffer) (ac, bc *bearerSession) {
	t.Helper()
	ac, bc = &bearerSession{t: t, url: audience, token: alice}, &bearerSession{t: t, url: audience, token: bob}
	for _, c := range []*bearerSession{ac, bc} {
		if code, body := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize with hydra's %s: %d %s\n%s", kind, code, body, stderr.String())
		}
	}
	if _, tools := ac.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(tools, `"f__echo"`) {
		t.Errorf("alice (admins) sees %s, want the flat profile admin", tools)
	}
	if _, tools := bc.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(tools, "call_dynamic_tool") || strings.Contains(tools, `"f__echo"`) {
		t.Errorf("bob sees %s, want the dynamic profile reader", tools)
	}
	if _, got := ac.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"from alice"}}}`); !strings.Contains(got, "from alice") {
		t.Errorf("alice's call: %s", got)
	}
	if _, got := bc.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"from bob"}}}}`); !strings.Contains(got, "from bob") {
		t.Errorf("bob's call: %s", got)
	}
	await.Costly(t, 10*time.Second, "both calls in the audit trail", func() bool {
		b, _ := os.ReadFile(auditPath)
		return strings.Contains(string(b), `"user":"Alice","subject":"jwt:alice"`) && strings.Contains(string(b), `"user":"Bob","subject":"jwt:bob"`)
	})
	return ac, bc
}

// signIn runs the authorization code flow for user as a browser would,
// through hydra and its login and consent app, and returns the access
// token for audience.
func (h *hydra) signIn(t *testing.T, clientID, secret, redirect, user, audience string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var code string
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: oneShotTransport(), CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			code = req.URL.Query().Get("code")
			if code == "" {
				t.Errorf("sign-in of %s: redirected without a code: %s", user, req.URL)
			}
			return http.ErrUseLastResponse
		}
		return nil
	}}
	auth := h.public + "/oauth2/auth?" + url.Values{"client_id": {clientID}, "response_type": {"code"}, "scope": {"openid"},
		"redirect_uri": {redirect}, "state": {"state-of-the-test"}, "audience": {audience}, "login_hint": {user}}.Encode()
	resp, err := browser.Get(auth)
	if err != nil {
		t.Fatalf("sign-in of %s: %v", user, err)
	}
	resp.Body.Close()
	if code == "" {
		t.Fatalf("sign-in of %s: no code (%s)", user, resp.Status)
	}
	resp, err = http.PostForm(h.public+"/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "client_id": {clientID}, "client_secret": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	body, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(body, &tok); tok.AccessToken == "" {
		t.Fatalf("token of %s: %s %s", user, resp.Status, body)
	}
	return tok.AccessToken
}

// claimsOf is a JWT's claims, unverified.
func claimsOf(t *testing.T, jwt string) map[string]any {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// kid is a JWT's key id.
func kid(t *testing.T, jwt string) string {
	b, _ := base64.RawURLEncoding.DecodeString(strings.Split(jwt, ".")[0])
	var h struct {
		Kid string `json:"kid"`
	}
	json.Unmarshal(b, &h)
	return h.Kid
}

func getJSON(t *testing.T, u string, out any) {
	resp, err := testClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
}

// bearerSession is a raw Streamable HTTP client with a bearer token.
type bearerSession struct {
	t                   *testing.T
	url, token, session string
}

func (c *bearerSession) do(body string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	return resp, string(b)
}

func (c *bearerSession) post(body string) (int, string) {
	resp, b := c.do(body)
	return resp.StatusCode, b
}

func (c *bearerSession) initialize() (int, string) {
	code, body := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code == http.StatusOK {
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return code, body
}

// refused is the status and WWW-Authenticate of an initialize.
func (c *bearerSession) refused() (int, string) {
	resp, _ := c.do(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestMCPClientSignsInThroughTheHub: an MCP client nobody here wrote
// (mcp-go's, with its OAuth support) finds the hub's authorization
// server from the 401's resource_metadata and the protected resource
// metadata, registers itself with ory/hydra dynamically, signs its user
// in by the authorization code flow with PKCE, and calls the hub with
// the JWT it gets, in the profile the user's groups choose.
func TestMCPClientSignsInThroughTheHub(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	bin, hub, audience := hydraAndHub(t)
	h := startHydraJWT(t, bin, map[string]jwtUser{"carol": {name: "Carol", groups: []string{"admins"}}}, audience)
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	base, _ := startHTTPHub(t, fmt.Sprintf(jwtTeamHub, auditPath, h.public, audience, fakeBin))
	hub.behind(base)

	redirect := "http://127.0.0.1:1/callback" // never reached: the browser stops at it
	c, err := mcpclient.NewOAuthStreamableHttpClient(audience, mcpclient.OAuthConfig{
		RedirectURI: redirect, Scopes: []string{"openid"}, TokenStore: mcpclient.NewMemoryTokenStore(), PKCEEnabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go", Version: "1"}
	_, err = c.Initialize(ctx, init)
	if !mcpclient.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("initialize without a token: %v, want the client to be asked to sign in", err)
	}
	handler := mcpclient.GetOAuthHandler(err)
	if err := handler.RegisterClient(ctx, "mcp-go-test"); err != nil {
		t.Fatalf("dynamic registration with hydra: %v", err)
	}
	verifier, _ := mcpclient.GenerateCodeVerifier()
	state, _ := mcpclient.GenerateState()
	authURL, err := handler.GetAuthorizationURL(ctx, state, mcpclient.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}
	code := browseToCode(t, authURL, redirect)
	if err := handler.ProcessAuthorizationResponse(ctx, code, state, verifier); err != nil {
		t.Fatalf("token exchange: %v", err)
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize signed in: %v", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "f__echo") {
		t.Errorf("carol (admins) sees %v, want the flat profile admin", names)
	}
	await.Costly(t, 10*time.Second, "carol in the audit trail", func() bool {
		if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "f__echo", Arguments: map[string]any{"text": "hi"}}}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(auditPath)
		return strings.Contains(string(b), `"user":"Carol","subject":"jwt:carol"`)
	})
}

// browseToCode follows authURL as a browser would, through hydra and its login
// and consent app, up to the redirect, and returns the code it carries.
func browseToCode(t *testing.T, authURL, redirect string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var code string
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: oneShotTransport(), CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			code = req.URL.Query().Get("code")
			if code == "" {
				t.Errorf("redirected without a code: %s", req.URL)
			}
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if code == "" {
		t.Fatalf("no code: %s %s", resp.Status, body)
	}
	return code
}

// oneShotTransport is a browser's transport for hydra's flows: a
// connection each request, because Go's transport sends an idempotent
// request again on a kept-alive connection that broke before any answer
// (hydra under load), and hydra's login and consent verifiers are good
// once ("The consent verifier has already been used").
func oneShotTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return tr
}
