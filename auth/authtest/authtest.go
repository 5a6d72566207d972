// Package authtest is an OAuth authorization server and protected MCP
// endpoint for tests of dynamic-mcp's sign-in.
package authtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is an in-test OAuth authorization server and protected MCP
// resource, strict about what the spec asks of clients: PKCE S256, the
// resource parameter on every token request, refresh token rotation.
type Server struct {
	// URL is where the server listens; the protected resource is URL+"/mcp".
	URL string
	srv *httptest.Server
	// Resource, when set, serves /mcp to requests with the current token.
	Resource http.Handler

	mu         sync.Mutex        // guards the fields below
	challenges map[string]string // PKCE challenge of each code issued (sign-ins may run at once)
	Authorize  url.Values
	TokenForms []url.Values
	Registered int
	Access     string
	Refresh    string
	Issued     int
	BadState   bool
	BadIss     bool
	NoRegister bool
	// TokenEndpoint, when set, is the token endpoint its metadata names
	// instead of its own (a server that points it elsewhere).
	TokenEndpoint string
	// RegistrationEndpoint, likewise, is the registration endpoint its
	// metadata names instead of its own.
	RegistrationEndpoint string
	// AccessTTL, when set, is how long an access token is good for (and
	// its expires_in, in whole seconds); by default an hour, and the token
	// never lapses.
	AccessTTL time.Duration
	// RevokeOnReplay revokes the grant when a refresh token that was used
	// already comes again, as ory/hydra and Notion do (OAuth 2.1 §4.3.1,
	// refresh token rotation): the access and refresh tokens stop working
	// and Revoked is set; only a new sign-in gets new ones.
	RevokeOnReplay bool
	Revoked        bool
	Refreshed      int // renewals granted
	expires        time.Time
	used           map[string]bool // refresh tokens used up
	// KeepTokens keeps every access token it issued good, not only the
	// latest: several users signed in at once, each with their own.
	KeepTokens bool
	issued     map[string]bool
	// clients are the client IDs registered (dyn-1, dyn-2, ...) and not
	// forgotten (Forget): the authorization endpoint shows an error page
	// for another dyn- client, as a server does for a client it does not
	// know (RFC 6749 §4.1.2.1: no redirect), and the token endpoint
	// answers invalid_client (§5.2).
	clients map[string]bool
	// RegisterDelay is how long a registration takes: sign-ins at once
	// then overlap in it.
	RegisterDelay time.Duration
	// ForgetAtAuthorize is how many of the next authorizations forget
	// every client (Forget) once granted, before their code is
	// exchanged: a reset in the middle of a sign-in.
	ForgetAtAuthorize int
	// GrantScopes grants the scopes a sign-in asked for (and its tokens'
	// renewals keep them), not always mcp:read: see ScopeOf.
	GrantScopes bool
	codeScopes  map[string]string // scope asked for with each code
	scope       string            // granted with the current access token
	scopes      map[string]string // granted with each access token issued
}

// ScopeOf is the scope granted with the token of authorization, a
// request's Authorization header (with GrantScopes).
func (a *Server) ScopeOf(authorization string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.scopes[strings.TrimPrefix(authorization, "Bearer ")]
}

func NewServer(t *testing.T) *Server {
	a := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"resource": a.srv.URL + "/mcp", "authorization_servers": []string{a.srv.URL}, "scopes_supported": []string{"mcp:read", "mcp:write"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		md := map[string]any{"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_post"},
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"}}
		a.mu.Lock()
		if !a.NoRegister {
			md["registration_endpoint"] = a.srv.URL + "/register"
		}
		if a.RegistrationEndpoint != "" {
			md["registration_endpoint"] = a.RegistrationEndpoint
		}
		if a.TokenEndpoint != "" {
			md["token_endpoint"] = a.TokenEndpoint
		}
		a.mu.Unlock()
		json.NewEncoder(w).Encode(md)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		delay := a.RegisterDelay
		a.mu.Unlock()
		time.Sleep(delay)
		a.mu.Lock()
		a.Registered++
		id := fmt.Sprintf("dyn-%d", a.Registered)
		if a.clients == nil {
			a.clients = map[string]bool{}
		}
		a.clients[id] = true
		a.mu.Unlock()
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "token_endpoint_auth_method": "none", "redirect_uris": req["redirect_uris"]})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		if !a.knows(q.Get("client_id")) {
			a.mu.Unlock()
			http.Error(w, "unknown client", http.StatusBadRequest)
			return
		}
		a.Authorize = q
		if a.challenges == nil {
			a.challenges = map[string]string{}
		}
		code := fmt.Sprintf("the-code-%d", len(a.challenges)+1)
		a.challenges[code] = q.Get("code_challenge")
		if a.codeScopes == nil {
			a.codeScopes = map[string]string{}
		}
		a.codeScopes[code] = q.Get("scope")
		if a.ForgetAtAuthorize > 0 {
			a.ForgetAtAuthorize--
			clear(a.clients)
		}
		a.mu.Unlock()
		state, iss := q.Get("state"), a.srv.URL
		if a.BadState {
			state = "not-the-state"
		}
		if a.BadIss {
			iss = "https://evil.example"
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(state)+"&iss="+url.QueryEscape(iss), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		a.mu.Lock()
		defer a.mu.Unlock()
		a.TokenForms = append(a.TokenForms, r.PostForm)
		fail := func(code string) {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": code})
		}
		if !a.knows(r.PostForm.Get("client_id")) {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
			return
		}
		if r.PostForm.Get("resource") != a.srv.URL+"/mcp" {
			fail("invalid_target")
			return
		}
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			challenge, ok := a.challenges[r.PostForm.Get("code")]
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				fail("invalid_grant")
				return
			}
			a.scope = a.codeScopes[r.PostForm.Get("code")]
		case "refresh_token":
			rt := r.PostForm.Get("refresh_token")
			if a.RevokeOnReplay && a.used[rt] {
				a.Revoked, a.Access, a.Refresh = true, "", ""
			}
			if rt == "" || rt != a.Refresh {
				fail("invalid_grant")
				return
			}
			if a.used == nil {
				a.used = map[string]bool{}
			}
			a.used[rt] = true
			a.Refreshed++
		default:
			fail("unsupported_grant_type")
			return
		}
		a.Issued++
		a.Access, a.Refresh = fmt.Sprintf("at-%d", a.Issued), fmt.Sprintf("rt-%d", a.Issued)
		if a.KeepTokens {
			if a.issued == nil {
				a.issued = map[string]bool{}
			}
			a.issued["Bearer "+a.Access] = true
		}
		ttl := time.Hour
		if a.AccessTTL > 0 {
			ttl = a.AccessTTL
			a.expires = time.Now().Add(ttl)
		}
		scope := "mcp:read"
		if a.GrantScopes {
			scope = a.scope
			if a.scopes == nil {
				a.scopes = map[string]string{}
			}
			a.scopes[a.Access] = scope
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": a.Access, "token_type": "Bearer", "refresh_token": a.Refresh, "expires_in": int64(ttl / time.Second), "scope": scope})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		ok := a.Access != "" && r.Header.Get("Authorization") == "Bearer "+a.Access && (a.expires.IsZero() || time.Now().Before(a.expires))
		ok = ok || a.KeepTokens && a.issued[r.Header.Get("Authorization")]
		a.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:read"`, a.srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if a.Resource != nil {
			a.Resource.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})
	a.srv = httptest.NewServer(mux)
	a.URL = a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

// Revoke makes the current access token invalid while its refresh token
// stays good, as an expiry the client did not foresee.
func (a *Server) Revoke() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Access = "revoked-" + a.Access
}

// RevokeToken makes an access token kept by KeepTokens invalid.
func (a *Server) RevokeToken(access string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.issued, "Bearer "+access)
}

// Forget forgets every client registered so far, as an authorization
// server that dropped its registrations (a reset, an expiry).
func (a *Server) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.clients)
}

// knows reports whether the server takes client id: any but a dyn- one
// it did not register or forgot. Called with a.mu held.
func (a *Server) knows(id string) bool {
	return !strings.HasPrefix(id, "dyn-") || a.clients[id]
}

// Lock and Unlock guard reading the exported fields while requests run.
func (a *Server) Lock()   { a.mu.Lock() }
func (a *Server) Unlock() { a.mu.Unlock() }
