package auth

import (
	"net/http"
	"net/http/httptest"
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
			w.Write([]byte(`{"issuer":"http://as","authorization_endpoint":"http://127.0.0.1/a","token_endpoint":"http://127.0.0.1/t"}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	md, err := discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", resourceMetadata{}, false)
	if err != nil || md.AuthorizationEndpoint != srv.URL+"/authorize" || md.TokenEndpoint != srv.URL+"/token" || md.RegistrationEndpoint != srv.URL+"/register" {
		t.Fatalf("defaults: %+v, %v", md, err)
	}
	published.Store(true)
	md, err = discoverServer(t.Context(), srv.Client(), srv.URL+"/mcp", resourceMetadata{AuthorizationServers: []string{"http://192.0.2.1/not-loopback", srv.URL + "/as"}}, true)
	if err != nil || md.Issuer != "http://as" || md.TokenEndpoint != "http://127.0.0.1/t" {
		t.Fatalf("published: %+v, %v", md, err)
	}
}
