package auth

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Where no authorization server publishes metadata, the endpoints MCP
// 2025-03-26 defaults to on the server's origin are used; the first named
// server that publishes some is used otherwise.
func TestDiscoverServer(t *testing.T) {
	var published atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if published.Load() && r.URL.Path == "/.well-known/oauth-authorization-server/as" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"http://127.0.0.1/a","token_endpoint":"http://127.0.0.1/t"}`, "http://"+r.Host+"/as")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	md, err := discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", resourceMetadata{}, false, issuerCheck{})
	if err != nil || md.AuthorizationEndpoint != srv.URL+"/authorize" || md.TokenEndpoint != srv.URL+"/token" || md.RegistrationEndpoint != srv.URL+"/register" {
		t.Fatalf("defaults: %+v, %v", md, err)
	}
	published.Store(true)
	md, err = discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", resourceMetadata{AuthorizationServers: []string{"http://192.0.2.1/not-loopback", srv.URL + "/as"}}, true, issuerCheck{})
	if err != nil || md.Issuer != srv.URL+"/as" || md.TokenEndpoint != "http://127.0.0.1/t" {
		t.Fatalf("published: %+v, %v", md, err)
	}
}

// Metadata that names another issuer than the one it was looked up for
// is refused (RFC 8414 §3.3), unless oauth.expected_issuer names it: then
// it is used, with a warning each time.
func TestDiscoverIssuerMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/openid-configuration/as" {
			w.Write([]byte(`{"issuer":"https://other.example/tenant","authorization_endpoint":"http://127.0.0.1/a","token_endpoint":"http://127.0.0.1/t"}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	prm := resourceMetadata{AuthorizationServers: []string{srv.URL + "/as"}}
	_, err := discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", prm, true, issuerCheck{})
	if err == nil || !strings.Contains(err.Error(), "oauth.expected_issuer: https://other.example/tenant") {
		t.Fatalf("mismatch: %v", err)
	}
	var logged bytes.Buffer
	check := issuerCheck{expected: "https://other.example/tenant/", logger: slog.New(slog.NewTextHandler(&logged, nil))}
	for range 2 {
		md, err := discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", prm, true, check)
		if err != nil || md.TokenEndpoint != "http://127.0.0.1/t" {
			t.Fatalf("expected issuer: %+v, %v", md, err)
		}
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings for two uses:\n%s", n, logged.String())
	}
}

// What the sign-in takes that go-sdk's oauthex would refuse (see the
// comment on discoverServer), each of which a server in the field sends:
// an empty quoted parameter in the 401's challenge, protected resource
// metadata naming its resource with a trailing slash and a member of an
// unexpected type, authorization server metadata served as text/plain
// without code_challenge_methods_supported; and a registration endpoint's
// refusal keeps its status apart from its body, for the sign-in page.
func TestDiscoveryTakesWhatOauthexRefuses(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="", resource_metadata="`+srv.URL+`/prm", scope="files:read"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/prm":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q],"bearer_methods_supported":"header"}`, srv.URL+"/mcp/", srv.URL)
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"%s/a","token_endpoint":"%s/t","response_types_supported":"code"}`, srv.URL, srv.URL, srv.URL)
		case "/register":
			http.Error(w, "internal detail", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ch := probe(t.Context(), srv.Client(), srv.URL+"/mcp", nil)
	if ch.metadataURL != srv.URL+"/prm" || ch.scope != "files:read" {
		t.Fatalf("challenge: %+v", ch)
	}
	prm, err := fetchResourceMetadata(t.Context(), srv.Client(), srv.URL+"/mcp", ch.metadataURL)
	if err != nil || prm.Resource != srv.URL+"/mcp/" || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("resource metadata: %+v, %v", prm, err)
	}
	md, err := discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", prm, true, issuerCheck{})
	if err != nil || md.lookedUp != srv.URL || md.TokenEndpoint != srv.URL+"/t" {
		t.Fatalf("authorization server metadata: %+v, %v", md, err)
	}
	_, err = register(t.Context(), srv.Client(), srv.URL+"/register", "http://127.0.0.1:1/callback", nil)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Status != http.StatusInternalServerError || ae.Body != "internal detail" {
		t.Fatalf("registration refused: %#v", err)
	}
}
