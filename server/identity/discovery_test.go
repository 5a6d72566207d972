package identity

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// shapedIssuer is an authorization server whose issuer URL has path (""
// for none) and whose metadata is served only at docs (well-known paths),
// each naming the issuer docIssuer gives it (nil: the issuer itself) and
// the keys at jwks path keysAt[doc] (default /jwks). fetched records the
// paths asked for.
type shapedIssuer struct {
	*issuer
	mu      sync.Mutex
	fetched []string
}

func newShapedIssuer(t *testing.T, path string, docs []string, docIssuer func(doc, iss string) string) *shapedIssuer {
	is := &shapedIssuer{issuer: &issuer{path: path}}
	is.rotate("k1")
	serve := map[string]bool{}
	for _, d := range docs {
		serve[d] = true
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		is.fetched = append(is.fetched, r.URL.Path)
		is.mu.Unlock()
		if r.URL.Path == "/jwks" || r.URL.Path == "/other-jwks" {
			is.mu.Lock()
			var set jose.JSONWebKeySet
			if r.URL.Path == "/jwks" {
				for _, k := range is.keys {
					set.Keys = append(set.Keys, k.Public())
				}
			}
			is.mu.Unlock()
			json.NewEncoder(w).Encode(set)
			return
		}
		if !serve[r.URL.Path] {
			http.NotFound(w, r)
			return
		}
		iss := is.url()
		if docIssuer != nil {
			iss = docIssuer(r.URL.Path, iss)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": is.srv.URL + "/jwks"})
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *shapedIssuer) asked() []string {
	is.mu.Lock()
	defer is.mu.Unlock()
	return append([]string(nil), is.fetched...)
}

// The issuer's metadata is found wherever the MCP authorization spec
// (2025-11-25) looks for it, in its order: RFC 8414's
// oauth-authorization-server, then OpenID Connect discovery, path
// inserted (and for OpenID Connect also appended) for an issuer with a
// path.
func TestDiscoveryShapes(t *testing.T) {
	for _, c := range []struct {
		name, path string
		docs       []string
		asked      []string // the metadata paths asked, in order, before the keys
	}{
		{"no path, RFC 8414 only", "/", []string{"/.well-known/oauth-authorization-server"},
			[]string{"/.well-known/oauth-authorization-server"}},
		{"no path and no slash, RFC 8414 only", "", []string{"/.well-known/oauth-authorization-server"},
			[]string{"/.well-known/oauth-authorization-server"}},
		{"no path, OpenID Connect only", "/", []string{"/.well-known/openid-configuration"},
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"path, RFC 8414 only", "/tenant1", []string{"/.well-known/oauth-authorization-server/tenant1"},
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"path with a terminating slash, RFC 8414 only", "/tenant1/", []string{"/.well-known/oauth-authorization-server/tenant1"},
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"path, OpenID Connect inserted only", "/realms/a", []string{"/.well-known/openid-configuration/realms/a"},
			[]string{"/.well-known/oauth-authorization-server/realms/a", "/.well-known/openid-configuration/realms/a"}},
		{"path, OpenID Connect appended only", "/tenant1", []string{"/tenant1/.well-known/openid-configuration"},
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
		{"path, all three: RFC 8414 first", "/tenant1", []string{"/tenant1/.well-known/openid-configuration", "/.well-known/openid-configuration/tenant1", "/.well-known/oauth-authorization-server/tenant1"},
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := newShapedIssuer(t, c.path, c.docs, nil)
			v := newTestVerifier(is.issuer, config.HTTPAuth{})
			id, err := v.Verify(context.Background(), is.token(t, is.claims(nil)))
			if err != nil {
				t.Fatalf("issuer %s: %v (asked %v)", is.url(), err, is.asked())
			}
			if id.Subject != "alice" {
				t.Errorf("identity %+v", id)
			}
			want := strings.Join(append(c.asked, "/jwks"), " ")
			if got := strings.Join(is.asked(), " "); got != want {
				t.Errorf("asked %s, want %s", got, want)
			}
		})
	}
}

// A metadata document that names another issuer is not used (RFC 8414
// section 3.3): a later one of the right issuer is, and with none the
// token is answered ErrUnavailable with an error that says which
// document named which issuer.
func TestDiscoveryIssuerMismatch(t *testing.T) {
	other := func(doc, iss string) string {
		if strings.Contains(doc, "oauth-authorization-server") {
			return "https://evil.example/"
		}
		return iss
	}
	t.Run("refused, then OpenID Connect's used", func(t *testing.T) {
		is := newShapedIssuer(t, "/t", []string{"/.well-known/oauth-authorization-server/t", "/t/.well-known/openid-configuration"}, other)
		v := newTestVerifier(is.issuer, config.HTTPAuth{})
		if _, err := v.Verify(context.Background(), is.token(t, is.claims(nil))); err != nil {
			t.Fatal(err)
		}
	})
	for _, path := range []string{"/", "/t"} {
		t.Run("only a mismatched one at "+path, func(t *testing.T) {
			is := newShapedIssuer(t, path, []string{"/.well-known/oauth-authorization-server" + strings.TrimSuffix(path, "/")}, other)
			v := newTestVerifier(is.issuer, config.HTTPAuth{})
			_, err := v.Verify(context.Background(), is.token(t, is.claims(nil)))
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `its issuer is "https://evil.example/", not http.auth.issuer "`+is.url()+`"`) {
				t.Fatalf("err = %v", err)
			}
			for _, p := range is.asked() {
				if p == "/jwks" {
					t.Errorf("the keys of a mismatched document were fetched")
				}
			}
		})
	}
	t.Run("a trailing slash is a different issuer", func(t *testing.T) {
		is := newShapedIssuer(t, "/", []string{"/.well-known/oauth-authorization-server"}, func(doc, iss string) string { return strings.TrimSuffix(iss, "/") })
		v := newTestVerifier(is.issuer, config.HTTPAuth{})
		if _, err := v.Verify(context.Background(), is.token(t, is.claims(nil))); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "its issuer is") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMetadataURLs(t *testing.T) {
	for in, want := range map[string]string{
		"https://as.example":            "https://as.example/.well-known/oauth-authorization-server https://as.example/.well-known/openid-configuration",
		"https://as.example/":           "https://as.example/.well-known/oauth-authorization-server https://as.example/.well-known/openid-configuration",
		"https://as.example:8443/a/b/":  "https://as.example:8443/.well-known/oauth-authorization-server/a/b https://as.example:8443/.well-known/openid-configuration/a/b https://as.example:8443/a/b/.well-known/openid-configuration",
		"https://as.example/t%2Fx/v2.0": "https://as.example/.well-known/oauth-authorization-server/t%2Fx/v2.0 https://as.example/.well-known/openid-configuration/t%2Fx/v2.0 https://as.example/t%2Fx/v2.0/.well-known/openid-configuration",
	} {
		got, err := auth.MetadataURLs(in)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
}
