package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
)

// visit plays the browser: it follows the authorization redirect to the
// loopback callback.
func visit(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func login(t *testing.T, a *authtest.Server, o LoginOptions) (*Record, error) {
	o.Open = func(u string) error { go visit(u); return nil }
	o.Timeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Login(ctx, "srv", a.URL+"/mcp", o)
}

func TestLoginWithDynamicRegistrationPKCEAndResource(t *testing.T) {
	a := authtest.NewServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.AccessToken != "at-1" || rec.RefreshToken != "rt-1" || rec.ClientID != "dyn-1" || rec.Issuer != a.URL || rec.Resource != a.URL+"/mcp" {
		t.Errorf("record: %+v", rec)
	}
	if a.Registered != 1 {
		t.Errorf("registered %d times", a.Registered)
	}
	q := a.Authorize
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != a.URL+"/mcp" || q.Get("scope") != "mcp:read" || q.Get("client_id") != "dyn-1" {
		t.Errorf("authorization request: %v", q)
	}
	if !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") {
		t.Errorf("redirect: %s", q.Get("redirect_uri"))
	}
	if rec.Expiry.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("expiry %v", rec.Expiry)
	}
}

func TestLoginWithPreRegisteredClient(t *testing.T) {
	a := authtest.NewServer(t)
	a.NoRegister = true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "set oauth.client_id") {
		t.Errorf("without registration or client id: %v", err)
	}
	rec, err := login(t, a, LoginOptions{ClientID: "pre-1", ClientSecret: "s3cret", Scopes: []string{"mcp:write"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Registered != 0 || rec.ClientID != "pre-1" || a.Authorize.Get("scope") != "mcp:write" {
		t.Errorf("registered %d, record %+v, authorize %v", a.Registered, rec, a.Authorize)
	}
	if form := a.TokenForms[len(a.TokenForms)-1]; form.Get("client_secret") != "s3cret" {
		t.Errorf("token request: %v", form)
	}
}

func TestLoginRefusesBadStateAndIssuer(t *testing.T) {
	a := authtest.NewServer(t)
	a.BadState = true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "state does not match") {
		t.Errorf("state mismatch: %v", err)
	}
	a.BadState, a.BadIss = false, true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("iss mismatch: %v", err)
	}
	if a.Issued != 0 {
		t.Error("a token was issued after a refused redirect")
	}
}

func TestStoreFilesAndLogout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth-servers")
	s := NewStore(dir)
	rec := &Record{Server: "web/search", URL: "https://search.example/mcp", AccessToken: "secret-token", RefreshToken: "r", TokenEndpoint: "https://as/token"}
	if err := s.Save(rec); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, url.PathEscape("web/search")+".sealed"))
	di, _ := os.Stat(dir)
	if fi == nil || fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes: file %v, dir %v", fi, di.Mode())
	}
	if _, err := s.Load("web/search", "https://other.example/mcp"); !errors.Is(err, ErrNoToken) {
		t.Errorf("a sign-in for another URL was used: %v", err)
	}
	got, err := s.Load("web/search", "https://search.example/mcp")
	if err != nil || got.AccessToken != "secret-token" {
		t.Fatalf("load: %v %+v", err, got)
	}
	if v := fmt.Sprint(got.LogValue()); strings.Contains(v, "secret-token") {
		t.Errorf("the token shows in logs: %s", v)
	}
	if err := s.Delete("web/search"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("web/search", "https://search.example/mcp"); !errors.Is(err, ErrNoToken) {
		t.Errorf("after logout: %v", err)
	}
}

func TestRefreshBeforeExpiryRotatesAndSaves(t *testing.T) {
	a := authtest.NewServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	rec.Expiry = time.Now().Add(30 * time.Second) // an hour token within a minute of expiry: renew first
	rec.Issued = rec.Expiry.Add(-time.Hour)
	store.Save(rec)
	src, err := NewSource(store, "srv", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	h, err := src.Header(context.Background())
	if err != nil || h != "Bearer at-2" {
		t.Fatalf("header %q, %v", h, err)
	}
	saved, _ := store.Load("srv", a.URL+"/mcp")
	if saved.RefreshToken != "rt-2" || saved.AccessToken != "at-2" {
		t.Errorf("the rotated refresh token was not saved: %+v", saved)
	}
	last := a.TokenForms[len(a.TokenForms)-1]
	if last.Get("grant_type") != "refresh_token" || last.Get("resource") != a.URL+"/mcp" {
		t.Errorf("refresh request: %v", last)
	}
	// A 401 renews on demand.
	if err := src.Renew(context.Background(), "Bearer at-2"); err != nil {
		t.Fatal(err)
	}
	if h, _ := src.Header(context.Background()); h != "Bearer at-3" {
		t.Errorf("after Renew: %s", h)
	}
	// Another call refused at-2 too, its answer coming after the
	// renewal: it retries with at-3, renewing nothing (a renewal would
	// refuse at-3, which the first call is retrying with).
	if err := src.Renew(context.Background(), "Bearer at-2"); err != nil {
		t.Fatal(err)
	}
	if h, _ := src.Header(context.Background()); h != "Bearer at-3" || a.Refreshed != 2 {
		t.Errorf("after a second refusal of the same token: %s, %d renewals, want at-3 and 2", h, a.Refreshed)
	}
}

func TestURLsMustBeSafe(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://as.example/token": true, "http://127.0.0.1:9000/x": true, "http://localhost/x": true,
		"http://as.example/token": false, "ftp://x/y": false, "not a url": false,
	} {
		if err := CheckURL(u); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
	_, err := SafeClient().Get("http://169.254.169.254/latest/meta-data/")
	if err == nil || !strings.Contains(err.Error(), "link-local or metadata") {
		t.Errorf("metadata address: %v", err)
	}
}

// A dynamic registration is kept by issuer (MCP 2026-07-28): a sign-in
// again with the same authorization server, resource and redirect reuses
// it; one whose previous sign-in was made with another authorization
// server registers a new client.
func TestRegistrationKeptByIssuer(t *testing.T) {
	// The first sign-in's port is the one Login bound (0: picked there,
	// held while it waits), not one picked free here and bound later; the
	// next sign-ins ask for it again, as a user's configured port would.
	// Another process may take it in between: then all again.
	for attempt := 1; !registrationKeptByIssuer(t); attempt++ {
		if attempt == 3 {
			t.Fatal("the first sign-in's port was taken before the next, 3 times")
		}
	}
}

// registrationKeptByIssuer is TestRegistrationKeptByIssuer once; false
// when the port of the first sign-in was taken before a next one.
func registrationKeptByIssuer(t *testing.T) bool {
	a := authtest.NewServer(t)
	first, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var port int
	if _, err := fmt.Sscanf(first.RedirectURI, "http://127.0.0.1:%d/callback", &port); err != nil || port == 0 ||
		first.Registration != RegDynamic || a.Registered != 1 {
		t.Fatalf("first sign-in: %+v, registered %d", first, a.Registered)
	}
	again, err := login(t, a, LoginOptions{RedirectPort: port, Previous: first})
	if errors.Is(err, syscall.EADDRINUSE) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	if a.Registered != 1 || again.ClientID != first.ClientID || again.Registration != RegDynamic {
		t.Errorf("same issuer: registered %d times, record %+v", a.Registered, again)
	}
	moved := *again
	moved.Issuer = "https://old-as.example"
	if _, err := login(t, a, LoginOptions{RedirectPort: port, Previous: &moved}); errors.Is(err, syscall.EADDRINUSE) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	if a.Registered != 2 {
		t.Errorf("another issuer: registered %d times, want a new registration", a.Registered)
	}
	pre, err := login(t, a, LoginOptions{ClientID: "pre-1", Previous: first})
	if err != nil {
		t.Fatal(err)
	}
	if pre.Registration != RegPreRegistered || pre.ClientID != "pre-1" || a.Registered != 2 {
		t.Errorf("pre-registered: %+v, registered %d", pre, a.Registered)
	}
	return true
}

// Without registration, the error says what to configure: the client ID,
// and the metadata document where the server takes them.
func TestNoRegistrationSaysWhatToConfigure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			fmt.Fprintf(w, `{"issuer":"http://%s","authorization_endpoint":"http://%[1]s/a","token_endpoint":"http://%[1]s/t","client_id_metadata_document_supported":true}`, r.Host)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	_, err := Login(t.Context(), "srv", srv.URL+"/mcp", LoginOptions{})
	if err == nil || !strings.Contains(err.Error(), "set oauth.client_id") || !strings.Contains(err.Error(), "oauth.client_metadata_url") {
		t.Errorf("error: %v", err)
	}
}

// A server that takes the initialize without a token and publishes no
// OAuth metadata needs no sign-in, and the error says so, not that a
// registration at a guessed endpoint failed; one that publishes
// authorization server metadata is still signed in to.
func TestNoSignInWhereTheServerAsksForNone(t *testing.T) {
	for _, withMetadata := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/mcp":
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"open","version":"1"}}}`)
			case withMetadata && r.URL.Path == "/.well-known/oauth-authorization-server":
				fmt.Fprintf(w, `{"issuer":"http://%s","authorization_endpoint":"http://%[1]s/a","token_endpoint":"http://%[1]s/t"}`, r.Host)
			default:
				http.NotFound(w, r)
			}
		}))
		_, err := Login(t.Context(), "srv", srv.URL+"/mcp", LoginOptions{Timeout: time.Second})
		srv.Close()
		if withMetadata {
			if errors.Is(err, ErrNoSignIn) || err == nil || !strings.Contains(err.Error(), "set oauth.client_id") {
				t.Errorf("with metadata: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrNoSignIn) || !strings.Contains(err.Error(), "it needs none") {
			t.Errorf("error: %v", err)
		}
	}
}

// A configured client is signed in at the 2025-03-26 default endpoints
// of a server that answers without a sign-in and publishes no metadata
// (the user asked for it), and a sign-in stopped is not said to be a
// server that does not answer.
func TestLoginWithAClientIDGoesOnWhereNoSignInIsAsked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/mcp" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"open","version":"1"}}}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var opened string
	_, err := Login(ctx, "srv", srv.URL+"/mcp", LoginOptions{ClientID: "pre", Timeout: time.Minute, Out: io.Discard,
		Open: func(u string) error { opened = u; cancel(); return nil }})
	if errors.Is(err, ErrNoSignIn) || !strings.HasPrefix(opened, srv.URL+"/authorize?") {
		t.Fatalf("opened %q, error %v", opened, err)
	}

	stopped, stop := context.WithCancel(t.Context())
	stop()
	_, err = Login(stopped, "srv", srv.URL+"/mcp", LoginOptions{Timeout: time.Second})
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "does not answer") {
		t.Errorf("a stopped sign-in: %v", err)
	}
}

// A server that does not answer at all is said to, not blamed on a
// registration at a guessed endpoint.
func TestLoginSaysTheServerDoesNotAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // its port now refuses connections
	_, err := Login(t.Context(), "srv", srv.URL+"/mcp", LoginOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "the server does not answer") || strings.Contains(err.Error(), "oauth.client_id") {
		t.Errorf("error: %v", err)
	}
}

// A record written before records named their registration is read with
// one inferred, and used as before.
func TestStoreMigratesRecordsWithoutRegistration(t *testing.T) {
	s := NewStore(t.TempDir())
	for _, c := range []struct{ server, file, want string }{
		{"dyn", `{"server":"dyn","url":"https://x/mcp","client_id":"c1","token_endpoint_auth_method":"none","access_token":"a"}`, RegDynamic},
		{"pre", `{"server":"pre","url":"https://x/mcp","client_id":"c2","client_secret":"s","token_endpoint_auth_method":"client_secret_basic","access_token":"a"}`, RegPreRegistered},
		{"doc", `{"server":"doc","url":"https://x/mcp","client_id":"https://me.example/client.json","token_endpoint_auth_method":"none","access_token":"a"}`, RegMetadataDocument},
	} {
		if err := os.WriteFile(filepath.Join(s.Dir(), c.server+".json"), []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := s.Load(c.server, "https://x/mcp")
		if err != nil || r.Registration != c.want || r.AccessToken != "a" {
			t.Errorf("%s: %+v, %v", c.server, r, err)
		}
	}
}

// A 2xx that is no MCP answer (a sign-in page a proxy redirects the
// initialize to, a web page at a wrong URL) does not say the server needs
// no sign-in.
func TestNoSignInOnlyFromAnMCPAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			http.Redirect(w, r, "/sso/login", http.StatusFound)
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<html>hello</html>")
		case "/sso/login":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<html>sign in</html>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/mcp", "/page"} {
		_, err := Login(t.Context(), "srv", srv.URL+path, LoginOptions{Timeout: time.Second})
		if err == nil || errors.Is(err, ErrNoSignIn) {
			t.Errorf("%s: %v", path, err)
		}
	}
}
