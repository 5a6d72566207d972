package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/testkeys"
)

// hydraTTL is how long hydra's access tokens live in the test: short, so
// that the hub renews them (at half their life) while the test runs.
const hydraTTL = 6 * time.Second

// TestSignInWithHydra signs in against an authorization server nobody
// here wrote, ory/hydra v2.3.0 (tools/hydra), end to end through `auth
// login` and calls through `serve` to an MCP server that checks tokens
// with hydra's introspection: with a pre-registered client, with dynamic
// registration, renewing with refresh token rotation, and after the MCP
// server moves to another authorization server, a new registration there.
// Hydra serves OpenID Connect discovery only (no RFC 8414 document).
func TestSignInWithHydra(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	if testing.Short() {
		t.Skip("builds and runs ory/hydra")
	}
	bin := buildHydra(t)
	h1 := startHydra(t, bin)
	var current atomic.Pointer[hydra]
	current.Store(h1)
	mcpURL := startIntrospectedMCP(t, &current)

	// No port: hydra lets a loopback redirect come back on any (RFC 8252
	// §7.3), and `auth login` listens on one the system gives it, which it
	// holds while it waits (no redirect_port picked here to bind later).
	redirect := "http://127.0.0.1/callback"
	h1.admin(t, http.MethodPost, "/admin/clients", map[string]any{
		"client_id": "hub-pre", "client_secret": "pre-registered-secret-of-hub", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "offline_access", "token_endpoint_auth_method": "client_secret_post",
	}, nil)

	home := t.TempDir()
	cfg := filepath.Join(home, "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`mode: flat
groups:
  pre:
    description: signed in with a pre-registered client
    url: %[1]s
    transport: streamable-http
    retry: { initial_interval: 100ms, reconnect_interval: 200ms }
    oauth: { client_id: hub-pre, client_secret: "${HYDRA_TEST_SECRET}", token_endpoint_auth_method: client_secret_post, scopes: [offline_access] }
  dyn:
    description: signed in with a dynamically registered client
    url: %[1]s
    transport: streamable-http
    retry: { initial_interval: 100ms, reconnect_interval: 200ms }
    oauth: { scopes: [offline_access] }
`, mcpURL)), 0o600)
	env := append(os.Environ(), "DYNAMIC_MCP_HOME="+home, "HYDRA_TEST_SECRET=pre-registered-secret-of-hub")
	store := auth.NewStore(filepath.Join(home, "oauth-servers"))

	if out := hydraLogin(t, env, cfg, "pre"); !strings.Contains(out, "client pre-registered") {
		t.Errorf("pre: %s", out)
	}
	if out := hydraLogin(t, env, cfg, "dyn"); !strings.Contains(out, "client dynamic") {
		t.Errorf("dyn: %s", out)
	}
	if n := len(h1.clients(t)); n != 2 {
		t.Errorf("hydra has %d clients, want the pre-registered one and one registered by the hub", n)
	}
	dyn1, err := store.Load("dyn", mcpURL)
	if err != nil || !strings.HasPrefix(dyn1.Issuer, h1.public) || dyn1.Registration != auth.RegDynamic || dyn1.RefreshToken == "" {
		t.Fatalf("dyn record: %v %v", dyn1, err)
	}

	c := startProcess(t, env, hubBin, "serve", "-c", cfg)
	c.initialize("2025-11-25")
	await.Costly(t, 20*time.Second, "both groups", func() bool {
		list := string(c.call("tools/list", nil))
		return strings.Contains(list, "pre__hello") && strings.Contains(list, "dyn__hello")
	})
	for _, tool := range []string{"pre__hello", "dyn__hello"} {
		if text, isErr := c.callText(tool, nil); isErr || text != "hello, signed-in hub" {
			t.Fatalf("%s: %q", tool, text)
		}
	}

	// Renewal with rotation: past half its life a token is renewed, and
	// the rotated refresh token is saved and works the next time.
	for i := range 2 {
		before, _ := store.Load("dyn", mcpURL)
		await.Costly(t, 2*hydraTTL, "the token to be due", func() bool { return time.Since(before.Issued) > hydraTTL*3/4 })
		if text, isErr := c.callText("dyn__hello", nil); isErr || text != "hello, signed-in hub" {
			t.Fatalf("call %d after the token was due: %q", i, text)
		}
		after, _ := store.Load("dyn", mcpURL)
		if after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
			t.Fatalf("renewal %d: the tokens did not change", i)
		}
	}

	// The MCP server moves to another authorization server: signing in
	// again registers a new client there, and the hub takes it up.
	h2 := startHydra(t, bin)
	current.Store(h2)
	if _, isErr := c.callText("dyn__hello", nil); !isErr {
		t.Error("a call with the old sign-in went through after the move")
	}
	await.Costly(t, 20*time.Second, "the hub to say the server moved", func() bool {
		return strings.Contains(c.stderr.String(), "now names authorization server "+h2.public)
	})
	if out := hydraLogin(t, env, cfg, "dyn"); !strings.Contains(out, "client dynamic") || !strings.Contains(out, h2.public) {
		t.Errorf("dyn with the new authorization server: %s", out)
	}
	dyn2, err := store.Load("dyn", mcpURL)
	if err != nil || !strings.HasPrefix(dyn2.Issuer, h2.public) || dyn2.ClientID == dyn1.ClientID {
		t.Fatalf("dyn record after the move: %v %v", dyn2, err)
	}
	if n := len(h2.clients(t)); n != 1 {
		t.Errorf("the new authorization server has %d clients, want the one the hub registered", n)
	}
	await.Costly(t, 20*time.Second, "the group with the new sign-in", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), "dyn__hello")
	})
	if text, isErr := c.callText("dyn__hello", nil); isErr || text != "hello, signed-in hub" {
		t.Fatalf("call with the new sign-in: %q", text)
	}

	status := exec.Command(hubBin, "auth", "status", "-c", cfg)
	status.Env = env
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pre-registered") || !strings.Contains(string(out), h2.public) {
		t.Errorf("auth status: %v\n%s", err, out)
	}
}

// buildHydra builds ory/hydra from tools/hydra (with -tags sqlite, for
// its in-memory store) once for the test binary; the test is skipped
// when it cannot be built, except in CI. Once: go build links hydra anew
// each time (no cache for -o), 5 s of CPU, and seven tests start hydra.
// The program is kept in the user's cache directory under the digest of
// what decides it (tools/hydra's go.mod and go.sum, the Go release), and
// a later run starts that one: hydra's source is pinned by its go.sum,
// and every hydra test waited for the link (and go's check of hydra's
// hundreds of packages) at the start of each run.
func buildHydra(t *testing.T) string {
	hydraBuild.once.Do(func() {
		hydraBuild.bin, hydraBuild.out, hydraBuild.err = cachedHydra(filepath.Join("..", "..", "tools", "hydra"))
	})
	if err := hydraBuild.err; err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ory/hydra could not be built (needs the Go module proxy, or its modules cached, and cgo): %v\n%s", err, hydraBuild.out)
		}
		t.Fatalf("build ory/hydra: %v\n%s", err, hydraBuild.out)
	}
	return hydraBuild.bin
}

// cachedHydra is the hydra built from the module in dir (cachedBuild).
func cachedHydra(dir string) (bin string, out []byte, err error) {
	digest := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", nil, err
		}
		digest.Write(b)
	}
	digest.Write([]byte(runtime.Version() + " sqlite cgo"))
	return cachedBuild("hydra", digest.Sum(nil), func(path string) ([]byte, error) {
		cmd := exec.Command("go", "build", "-tags", "sqlite", "-o", path, "github.com/ory/hydra/v2")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		return cmd.CombinedOutput()
	})
}

// hydraBuild is buildHydra's one build.
var hydraBuild struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}

// hydra is a running ory/hydra and its login and consent app.
type hydra struct {
	public, adminURL string
}

// startHydra runs hydra on loopback with an in-memory store, dynamic
// registration enabled, and a login and consent app that lets anyone in
// and grants what is asked.
func startHydra(t *testing.T, bin string) *hydra {
	h := &hydra{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var next struct {
			RedirectTo string `json:"redirect_to"`
		}
		switch r.URL.Path {
		case "/login":
			ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
			h.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch, map[string]any{"subject": "user"}, &next)
		case "/consent":
			ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
			var req struct {
				Scope    []string `json:"requested_scope"`
				Audience []string `json:"requested_access_token_audience"`
			}
			h.admin(t, http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil, &req)
			h.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch,
				map[string]any{"grant_scope": req.Scope, "grant_access_token_audience": req.Audience}, &next)
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
strategies: { access_token: opaque }
ttl: { access_token: %s }
oidc:
  dynamic_client_registration: { enabled: true }
webfinger:
  oidc_discovery: { client_registration_url: %s/oauth2/register }
log: { level: warn }
`, publicHost, adminHost, h.public, app.URL, app.URL, hydraTTL, h.public)
	})
	return h
}

// run starts hydra (bin) on the config conf writes for its two
// listeners (the host of serve.public and of serve.admin), with env
// added to the environment, and waits until it is ready; the test's
// cleanup stops it. Hydra listens on Unix sockets of the test's, each
// behind a front the test keeps (front_test.go): no port is picked for
// hydra to bind later, which another process could take meanwhile.
func (h *hydra) run(t *testing.T, bin string, conf func(publicHost, adminHost string) string, env ...string) {
	public, admin := startFront(t), startFront(t)
	h.public, h.adminURL = public.URL, admin.URL
	// Short: a socket's path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "hydra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	publicSock, adminSock := filepath.Join(dir, "public.sock"), filepath.Join(dir, "admin.sock")
	public.to("unix", publicSock)
	admin.to("unix", adminSock)
	path := filepath.Join(dir, "hydra.yml")
	if err := os.WriteFile(path, []byte(conf("unix:"+publicSock, "unix:"+adminSock)), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--config", path)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(append(os.Environ(), "DISABLE_TELEMETRY=1", "SQA_OPT_OUT=true"), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("hydra %s:\n%s", h.public, logs.String())
		}
	})
	await.Costly(t, 60*time.Second, "hydra to be ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("hydra exited before it was ready:\n%s", logs)
		default:
		}
		resp, err := testClient.Get(h.public + "/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	h.importKeys(t)
}

// hydraKey is the RSA key every hydra of the test binary signs with,
// made once. Hydra makes its own keys on the first request that needs
// them (the JWKS, a token, an ID token): two 4096-bit RSA keys at once,
// 1-9 s of CPU, and its server closes a connection whose answer takes
// longer than 10 s (ory/graceful's WriteTimeout): on a loaded machine
// the request that made hydra generate them got EOF. A key of testkeys,
// made ahead of time, costs nothing.
var hydraKey = sync.OnceValue(testkeys.Next)

// importKeys gives hydra the keys it signs ID tokens and JWT access
// tokens with, before anything asks for them, so that hydra never
// generates its own while a request waits.
func (h *hydra) importKeys(t *testing.T) {
	t.Helper()
	key := hydraKey()
	for _, set := range []string{"hydra.openid.id-token", "hydra.jwt.access-token"} {
		jwk := jose.JSONWebKey{Key: key, KeyID: set, Algorithm: "RS256", Use: "sig"}
		// Asked again until taken: hydra may make its own set as it
		// starts, and on a loaded machine the PUT that met it making
		// one outlived its 10 s write timeout (502 from the front, a
		// stress run). A PUT replaces the set: asking again is safe.
		await.Costly(t, 60*time.Second, "hydra to take the key of "+set, func() bool {
			return h.tryAdmin(http.MethodPut, "/admin/keys/"+set, map[string]any{"keys": []jose.JSONWebKey{jwk}}, nil) == nil
		})
	}
}

// rotateKey gives hydra a new key for set, kid, which it signs with from
// then on (its newest); made here, not by hydra, for importKeys' reason,
// and not hydraKey: a key the hub has not seen.
func (h *hydra) rotateKey(t *testing.T, set, kid string) {
	t.Helper()
	key := testkeys.Next()
	for key.Equal(hydraKey()) {
		key = testkeys.Next()
	}
	h.admin(t, http.MethodPut, "/admin/keys/"+set+"/"+kid, jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: "RS256", Use: "sig"}, nil)
}

// admin calls hydra's admin API with body as JSON, decoding the answer
// into out.
func (h *hydra) admin(t *testing.T, method, path string, body, out any) {
	if err := h.tryAdmin(method, path, body, out); err != nil {
		t.Error(err)
	}
}

// tryAdmin is admin, returning what went wrong.
func (h *hydra) tryAdmin(method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, h.adminURL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		return fmt.Errorf("hydra %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var msg bytes.Buffer
		msg.ReadFrom(resp.Body)
		return fmt.Errorf("hydra %s %s: %s: %s", method, path, resp.Status, msg.String())
	}
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// clients are the clients hydra has.
func (h *hydra) clients(t *testing.T) []map[string]any {
	var list []map[string]any
	h.admin(t, http.MethodGet, "/admin/clients", nil, &list)
	return list
}

// startIntrospectedMCP serves an MCP server with one tool, hello, to
// requests whose token the current hydra says is active (RFC 7662); its
// protected resource metadata names the current hydra.
func startIntrospectedMCP(t *testing.T, current *atomic.Pointer[hydra]) string {
	streamable := helloMCP("hello, signed-in hub")
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{current.Load().public + "/"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !introspect(current.Load(), token) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// introspect asks h whether token is active.
func introspect(h *hydra, token string) bool {
	resp, err := http.PostForm(h.adminURL+"/admin/oauth2/introspect", url.Values{"token": {token}})
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var v struct {
		Active bool `json:"active"`
	}
	return json.NewDecoder(resp.Body).Decode(&v) == nil && v.Active
}

// hydraLogin runs `auth login server` and plays the browser: it follows
// the printed URL through hydra, its login and consent app, to the hub's
// loopback redirect. It returns what the command printed.
func hydraLogin(t *testing.T, env []string, cfg, server string) string {
	t.Helper()
	login := exec.Command(hubBin, "auth", "login", server, "-c", cfg, "--no-browser", "--timeout", "30s")
	login.Env = env
	stderr, _ := login.StderrPipe()
	var stdout strings.Builder
	login.Stdout = &stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "http") {
			jar, _ := cookiejar.New(nil)
			browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
			go func() {
				if resp, err := browser.Get(line); err == nil {
					resp.Body.Close()
				}
			}()
			break
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
		}
	}()
	<-done
	err := login.Wait()
	if err != nil {
		t.Fatalf("auth login %s: %v\n%s%s", server, err, stdout.String(), logs.String())
	}
	return stdout.String()
}
