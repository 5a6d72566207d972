package auth

import (
	"bytes"
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
