package mcphttp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/testkeys"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// browser is a person's browser: its cookies, and who sits at it (the
// user the test identity provider signs in, as a person would type
// their name and password there).
type browser struct {
	person string
	client *http.Client
}

func newBrowser(person string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{person: person}
	b.client = &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("X-Test-Person", person)
		return testClient.Transport.RoundTrip(r)
	})}
	return b
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var signInForm = regexp.MustCompile(`<form method="post" action="/auth/start"><input type="hidden" name="server" value="([^"]*)"><input type="hidden" name="state" value="([^"]*)">`)

// page GETs u: its status and body.
func (b *browser) page(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// startRequest is the POST of the sign-in page's form of link (the
// page's body), from origin (as a browser does, Origin set; none when
// empty).
func startRequest(t *testing.T, link, pageBody, origin string) *http.Request {
	t.Helper()
	m := signInForm.FindStringSubmatch(pageBody)
	if m == nil {
		t.Fatalf("no sign-in form in %s", pageBody)
	}
	u, _ := url.Parse(link)
	req, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+"/auth/start",
		strings.NewReader(url.Values{"server": {html.UnescapeString(m[1])}, "state": {html.UnescapeString(m[2])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return req
}

// submit POSTs the sign-in page's form of link from origin and follows
// the redirects: the last page's status and body.
func (b *browser) submit(t *testing.T, link, pageBody, origin string) (int, string) {
	t.Helper()
	resp, err := b.client.Do(startRequest(t, link, pageBody, origin))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// open opens a sign-in link and presses its button, as its person would:
// the status and body of the last page (the link's page when it is not
// 200).
func (b *browser) open(t *testing.T, link string) (int, string) {
	t.Helper()
	resp, body := b.page(t, link)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, body
	}
	u, _ := url.Parse(link)
	return b.submit(t, link, body, u.Scheme+"://"+u.Host)
}

// loginIssuer is the hub's identity provider: JWT access tokens for the
// callers (testIssuer's) and an OpenID Connect authorization server for
// the hub's client, which signs in whoever sits at the browser.
type loginIssuer struct {
	*testIssuer
	clientID string

	mu         sync.Mutex // guards codes and authorized
	codes      map[string]loginCode
	authorized []string // the people signed in, in order
}

type loginCode struct{ person, nonce, challenge, redirect string }

// people are the test's users by subject: their names.
var people = map[string]string{"alice": "Alice", "bob": "Bob", "mallory": "Mallory"}

func newLoginIssuer(t *testing.T, clientID string) *loginIssuer {
	li := &loginIssuer{testIssuer: &testIssuer{key: jose.JSONWebKey{Key: testkeys.Next(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}}, clientID: clientID, codes: map[string]loginCode{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		u := li.srv.URL
		json.NewEncoder(w).Encode(map[string]any{"issuer": u, "jwks_uri": u + "/jwks", "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{li.key.Public()}})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		person := r.Header.Get("X-Test-Person")
		if q.Get("client_id") != clientID || q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || !strings.Contains(q.Get("scope"), "openid") || people[person] == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		li.mu.Lock()
		li.codes[code] = loginCode{person, q.Get("nonce"), q.Get("code_challenge"), q.Get("redirect_uri")}
		li.authorized = append(li.authorized, person)
		li.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		li.mu.Lock()
		c, ok := li.codes[r.PostForm.Get("code")]
		delete(li.codes, r.PostForm.Get("code"))
		li.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		id, _, _ := r.BasicAuth()
		if id == "" {
			id = r.PostForm.Get("client_id")
		}
		if !ok || id != clientID || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("redirect_uri") != c.redirect {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "opaque-" + rand.Text(), "token_type": "Bearer", "expires_in": 3600,
			"id_token": li.tokenWith(t, map[string]any{"sub": c.person, "name": people[c.person], "aud": clientID, "nonce": c.nonce})})
	})
	li.srv = httptest.NewServer(mux)
	t.Cleanup(li.srv.Close)
	return li
}

func (li *loginIssuer) signedIn() []string {
	li.mu.Lock()
	defer li.mu.Unlock()
	return append([]string(nil), li.authorized...)
}

// perUser is a hub with a per-user server, docs, in front of the test
// authorization server, with callers of li's JWTs (http.auth, plus
// authExtra) and the static token of ci.
type perUser struct {
	t       *testing.T
	li      *loginIssuer
	url     string // the face's
	calls   func() []seenCall
	clients map[string]*bearerClient
}

const ciToken = "ci-token-0123456789"

func newPerUser(t *testing.T, authExtra string) *perUser {
	a, seen, dir := savedUpstream(t)
	return startPerUser(t, a, seen, dir, authExtra, nil)
}

// startPerUser serves the hub (its state in dir) for newPerUser.
func startPerUser(t *testing.T, a *authtest.Server, seen func() []seenCall, dir, authExtra string, li *loginIssuer) *perUser {
	if li == nil {
		li = newLoginIssuer(t, "hub-sign-in")
	}
	yaml := flatFakeYAML(dir, "call_timeout: 5s", "    args: []\n") + fmt.Sprintf(`  docs:
    description: a protected server, each user signed in for themselves
    url: %s/mcp
    transport: streamable-http
    auth: per-user
`, a.URL)
	yaml = strings.Replace(yaml, "groups:\n", fmt.Sprintf("http: { auth: { issuer: %s, audience: %s%s } }\ngroups:\n", li.srv.URL, testAudience, authExtra), 1)
	h, mgr := runHub(t, yaml, nil)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	face := New(h, Options{Tokens: map[string]string{"ci": ciToken}, Auth: cfg.HTTP.Auth, SignIns: mgr}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	p := &perUser{t: t, li: li, url: ts.URL, calls: seen, clients: map[string]*bearerClient{}}
	return p
}

// client is the MCP client of user (a subject of people, or "ci"),
// initialized.
func (p *perUser) client(user string) *bearerClient {
	if c := p.clients[user]; c != nil {
		return c
	}
	token := ciToken
	if user != "ci" {
		token = p.li.token(p.t, user, people[user], testAudience)
	}
	c := &bearerClient{t: p.t, url: p.url + "/mcp", token: token}
	if code := c.initialize(); code != http.StatusOK {
		p.t.Fatalf("%s's initialize: %d", user, code)
	}
	await.For(p.t, 10*time.Second, "the per-user server's tools", func() bool {
		_, got := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	p.clients[user] = c
	return c
}

// call calls docs' whoami as user: the answer.
func (p *perUser) call(user string) string {
	_, got := p.client(user).post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"` + user + `"}}}`)
	return strings.ReplaceAll(got, `\u0026`, "&")
}

// link is the sign-in link user's call is answered with.
func (p *perUser) link(user string) string {
	p.t.Helper()
	got := p.call(user)
	link := signInLink.FindString(got)
	if !strings.Contains(got, `"code":-32042`) || link == "" {
		p.t.Fatalf("%s's call: %s; want -32042 with a sign-in link", user, got)
	}
	return link
}

// tokensOf are the tokens the upstream saw on who's calls.
func (p *perUser) tokensOf(who string) map[string]bool {
	out := map[string]bool{}
	for _, c := range p.calls() {
		if c.who == who {
			out[c.token] = true
		}
	}
	return out
}

// Opening a sign-in link (GET) shows a page that names the server and
// the user it signs in, with a button; it neither uses the link up nor
// starts a sign-in, so that a chat app's link preview or a mail scanner
// that fetches it does neither. The button POSTs; a POST from another
// site's page is refused; the page is not to be framed. Without
// http.auth.client_id the page says the link is the user's alone.
func TestSignInLinkPage(t *testing.T) {
	p := newPerUser(t, "")
	link := p.link("alice")
	someone := newBrowser("bob")
	for range 2 {
		resp, body := someone.page(t, link)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "You are signing in to <b>docs</b> as <b>Alice</b>") ||
			!strings.Contains(body, "This link is Alice's alone") || !signInForm.MatchString(body) {
			t.Fatalf("the link's page: %d %s", resp.StatusCode, body)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("the page's headers: %v", resp.Header)
		}
	}
	if got := p.call("alice"); !strings.Contains(got, `"code":-32042`) {
		t.Fatalf("alice's call after her link was fetched: %s; want still -32042", got)
	}
	_, body := someone.page(t, link)
	if code, got := someone.submit(t, link, body, "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("the form posted from another site: %d %s; want 403", code, got)
	}
	alice := newBrowser("alice")
	if code, got := alice.submit(t, link, body, p.url); code != http.StatusOK || !strings.Contains(got, "Alice is signed in to docs") {
		t.Fatalf("alice pressed the button: %d %s", code, got)
	}
	if resp, _ := alice.page(t, link); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the link after use: %d, want 400", resp.StatusCode)
	}
	if got := p.call("alice"); !strings.Contains(got, "hello alice") {
		t.Errorf("alice's call after signing in: %s", got)
	}
}

// With http.auth.client_id, a JWT caller's link goes on to the upstream
// only for the person the hub's identity provider signs in as that
// caller: mallory opening alice's link (it leaked) is refused 403, the
// link is used up and nothing is signed in for alice; alice opening
// mallory's (sent to her to trick her into signing mallory in with her
// own upstream account) likewise. Alice's own link, opened by alice,
// signs her in; her call runs with her token, and no call of anyone
// runs with another's. A static token's caller (ci) has no account at
// the identity provider: its link is confirmed by its page alone.
func TestSignInLinkBoundToUser(t *testing.T) {
	p := newPerUser(t, ", client_id: hub-sign-in")
	aliceLink := p.link("alice")
	resp, body := newBrowser("mallory").page(t, aliceLink)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "as <b>Alice</b>") || !strings.Contains(body, "to show that you are Alice") {
		t.Fatalf("alice's link's page: %d %s", resp.StatusCode, body)
	}
	if code, got := newBrowser("mallory").open(t, aliceLink); code != http.StatusForbidden || !strings.Contains(got, "This sign-in link is not yours") ||
		!strings.Contains(got, "signs <b>Alice</b> in to docs") || !strings.Contains(got, "as <b>Mallory</b>") {
		t.Fatalf("mallory opened alice's link: %d %s; want 403", code, got)
	}
	if got := p.li.signedIn(); len(got) != 1 || got[0] != "mallory" {
		t.Errorf("the identity provider signed in %v; want mallory", got)
	}
	if got := p.call("alice"); !strings.Contains(got, `"code":-32042`) {
		t.Fatalf("alice's call after mallory opened her link: %s; want -32042 (nothing signed in)", got)
	}
	if code, _ := newBrowser("alice").open(t, aliceLink); code != http.StatusBadRequest {
		t.Errorf("alice's link after mallory used it: %d; want 400", code)
	}

	// Mallory sends alice his link: she is refused as well.
	malloryLink := p.link("mallory")
	if code, got := newBrowser("alice").open(t, malloryLink); code != http.StatusForbidden || !strings.Contains(got, "signs <b>Mallory</b> in") {
		t.Fatalf("alice opened mallory's link: %d %s; want 403", code, got)
	}
	if got := p.call("mallory"); !strings.Contains(got, `"code":-32042`) {
		t.Fatalf("mallory's call after alice opened his link: %s; want -32042", got)
	}

	// Alice's own link, by alice.
	if code, got := newBrowser("alice").open(t, p.link("alice")); code != http.StatusOK || !strings.Contains(got, "Alice is signed in to docs") {
		t.Fatalf("alice opened her own link: %d %s", code, got)
	}
	if got := p.call("alice"); !strings.Contains(got, "hello alice") {
		t.Fatalf("alice's call after signing in: %s", got)
	}
	if got := p.call("mallory"); !strings.Contains(got, `"code":-32042`) {
		t.Errorf("mallory's call after alice signed in: %s; want -32042", got)
	}

	// ci's link: no identity provider.
	before := len(p.li.signedIn())
	ciLink := p.link("ci")
	if _, body := newBrowser("bob").page(t, ciLink); !strings.Contains(body, "This link is ci's alone") {
		t.Errorf("ci's link's page: %s", body)
	}
	if code, got := newBrowser("bob").open(t, ciLink); code != http.StatusOK || !strings.Contains(got, "ci is signed in to docs") {
		t.Fatalf("ci's link: %d %s", code, got)
	}
	if got := p.li.signedIn(); len(got) != before {
		t.Errorf("ci's link went through the identity provider: %v", got)
	}
	if got := p.call("ci"); !strings.Contains(got, "hello ci") {
		t.Errorf("ci's call after signing in: %s", got)
	}
	if len(p.tokensOf("mallory")) != 0 {
		t.Errorf("mallory's calls reached the server: %v", p.tokensOf("mallory"))
	}
	for tok := range p.tokensOf("alice") {
		if p.tokensOf("ci")[tok] {
			t.Errorf("alice and ci share a token: %s", tok)
		}
	}
}
