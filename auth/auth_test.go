package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// authServer is an in-test OAuth authorization server and protected MCP
// resource, strict about what the spec asks of clients.
type authServer struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	challenge   string // PKCE challenge of the pending code
	authorize   url.Values
	tokenForms  []url.Values
	registered  int
	access      string
	refresh     string
	issued      int
	badState    bool
	badIss      bool
	noRegister  bool
	preClientID string
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"resource": a.srv.URL + "/mcp", "authorization_servers": []string{a.srv.URL}, "scopes_supported": []string{"mcp:read", "mcp:write"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		md := map[string]any{"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_post"},
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"}}
		if !a.noRegister {
			md["registration_endpoint"] = a.srv.URL + "/register"
		}
		json.NewEncoder(w).Encode(md)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.registered++
		a.mu.Unlock()
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-1", "token_endpoint_auth_method": "none", "redirect_uris": req["redirect_uris"]})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.authorize, a.challenge = q, q.Get("code_challenge")
		a.mu.Unlock()
		state, iss := q.Get("state"), a.srv.URL
		if a.badState {
			state = "not-the-state"
		}
		if a.badIss {
			iss = "https://evil.example"
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=the-code&state="+url.QueryEscape(state)+"&iss="+url.QueryEscape(iss), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		a.mu.Lock()
		defer a.mu.Unlock()
		a.tokenForms = append(a.tokenForms, r.PostForm)
		fail := func(code string) {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": code})
		}
		if r.PostForm.Get("resource") != a.srv.URL+"/mcp" {
			fail("invalid_target")
			return
		}
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if r.PostForm.Get("code") != "the-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != a.challenge {
				fail("invalid_grant")
				return
			}
		case "refresh_token":
			if r.PostForm.Get("refresh_token") != a.refresh {
				fail("invalid_grant")
				return
			}
		default:
			fail("unsupported_grant_type")
			return
		}
		a.issued++
		a.access, a.refresh = fmt.Sprintf("at-%d", a.issued), fmt.Sprintf("rt-%d", a.issued)
		json.NewEncoder(w).Encode(map[string]any{"access_token": a.access, "token_type": "Bearer", "refresh_token": a.refresh, "expires_in": 3600, "scope": "mcp:read"})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		ok := a.access != "" && r.Header.Get("Authorization") == "Bearer "+a.access
		a.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:read"`, a.srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io := `{"jsonrpc":"2.0","id":1,"result":{}}`
		w.Write([]byte(io))
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

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

func login(t *testing.T, a *authServer, o LoginOptions) (*Record, error) {
	o.Open = func(u string) error { go visit(u); return nil }
	o.Timeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Login(ctx, "srv", a.srv.URL+"/mcp", o)
}

func TestLoginWithDynamicRegistrationPKCEAndResource(t *testing.T) {
	a := newAuthServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.AccessToken != "at-1" || rec.RefreshToken != "rt-1" || rec.ClientID != "dyn-1" || rec.Issuer != a.srv.URL || rec.Resource != a.srv.URL+"/mcp" {
		t.Errorf("record: %+v", rec)
	}
	if a.registered != 1 {
		t.Errorf("registered %d times", a.registered)
	}
	q := a.authorize
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != a.srv.URL+"/mcp" || q.Get("scope") != "mcp:read" || q.Get("client_id") != "dyn-1" {
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
	a := newAuthServer(t)
	a.noRegister = true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "set oauth.client_id") {
		t.Errorf("without registration or client id: %v", err)
	}
	rec, err := login(t, a, LoginOptions{ClientID: "pre-1", ClientSecret: "s3cret", Scopes: []string{"mcp:write"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.registered != 0 || rec.ClientID != "pre-1" || a.authorize.Get("scope") != "mcp:write" {
		t.Errorf("registered %d, record %+v, authorize %v", a.registered, rec, a.authorize)
	}
	if form := a.tokenForms[len(a.tokenForms)-1]; form.Get("client_secret") != "s3cret" {
		t.Errorf("token request: %v", form)
	}
}

func TestLoginRefusesBadStateAndIssuer(t *testing.T) {
	a := newAuthServer(t)
	a.badState = true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "state does not match") {
		t.Errorf("state mismatch: %v", err)
	}
	a.badState, a.badIss = false, true
	if _, err := login(t, a, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("iss mismatch: %v", err)
	}
	if a.issued != 0 {
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
	fi, _ := os.Stat(filepath.Join(dir, url.PathEscape("web/search")+".json"))
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
	a := newAuthServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	rec.Expiry = time.Now().Add(30 * time.Second) // within a minute: renew first
	store.Save(rec)
	src, err := NewSource(store, "srv", a.srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	h, err := src.Header(context.Background())
	if err != nil || h != "Bearer at-2" {
		t.Fatalf("header %q, %v", h, err)
	}
	saved, _ := store.Load("srv", a.srv.URL+"/mcp")
	if saved.RefreshToken != "rt-2" || saved.AccessToken != "at-2" {
		t.Errorf("the rotated refresh token was not saved: %+v", saved)
	}
	last := a.tokenForms[len(a.tokenForms)-1]
	if last.Get("grant_type") != "refresh_token" || last.Get("resource") != a.srv.URL+"/mcp" {
		t.Errorf("refresh request: %v", last)
	}
	// A 401 renews on demand.
	if err := src.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h, _ := src.Header(context.Background()); h != "Bearer at-3" {
		t.Errorf("after Renew: %s", h)
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
