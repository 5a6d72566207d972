package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestResourceCovers(t *testing.T) {
	const server = "https://mcp.example.com/tenant/mcp"
	cases := []struct {
		resource string
		want     bool
	}{
		{"https://mcp.example.com/tenant/mcp", true},
		{"https://mcp.example.com/tenant/mcp/", true},    // a trailing slash
		{"HTTPS://MCP.Example.COM/tenant/mcp", true},     // scheme and host without case
		{"https://mcp.example.com:443/tenant/mcp", true}, // the default port
		{"https://mcp.example.com", true},                // the origin (root well-known metadata)
		{"https://mcp.example.com/", true},               // likewise
		{"https://mcp.example.com/tenant", true},         // a prefix by whole segments
		{"https://mcp.example.com/tenant/mcp?x=1", true}, // the query aside
		{"https://evil.example.com/tenant/mcp", false},   // another host
		{"https://mcp.example.com.evil.example/tenant/mcp", false},
		{"http://mcp.example.com/tenant/mcp", false},        // another scheme
		{"https://mcp.example.com:8443/tenant/mcp", false},  // another port
		{"https://mcp.example.com/other/mcp", false},        // another path on the origin
		{"https://mcp.example.com/ten", false},              // not a whole segment
		{"https://mcp.example.com/tenant/mcp/more", false},  // below the server
		{"https://mcp.example.com/TENANT/mcp", false},       // paths keep their case
		{"https://user@evil.example.com/tenant/mcp", false}, // userinfo does not make it the host
		{"mcp.example.com/tenant/mcp", false},               // no scheme
		{"", false},
	}
	for _, c := range cases {
		if got := resourceCovers(c.resource, server); got != c.want {
			t.Errorf("resource %q for server %s: %v, want %v", c.resource, server, got, c.want)
		}
	}
	// A server at a default port named in its URL, and one at the root.
	if !resourceCovers("https://mcp.example.com/mcp", "https://MCP.example.com:443/mcp/") {
		t.Error("the server's URL with its default port and a trailing slash: refused")
	}
	if resourceCovers("https://mcp.example.com/mcp", "https://mcp.example.com") {
		t.Error("a path below a server at the root: taken")
	}
}

// resourceServers are an MCP server whose protected resource metadata
// names resource(its URL) and the authorization server
// as, which counts every request it gets and serves its metadata and a
// registration endpoint.
func resourceServers(t *testing.T, resource func(mcpURL string) string) (mcpURL string, as *httptest.Server, asked *atomic.Int32) {
	t.Helper()
	asked = new(atomic.Int32)
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			fmt.Fprintf(w, `{"issuer":%[1]q,"authorization_endpoint":"%[1]s/authorize","token_endpoint":"%[1]s/token","registration_endpoint":"%[1]s/register"}`, as.URL)
		case "/register":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"client_id":"c1"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/prm"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/prm":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, resource(srv.URL+"/mcp"), as.URL)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", as, asked
}

// A server whose protected resource metadata names another server's
// resource (and that server's authorization server) gets no sign-in:
// `auth login` and the per-user sign-in both refuse, naming both URLs,
// and nothing reaches the authorization server it names (RFC 9728 §3.3),
// so no token for the other server is asked for, let alone sent to it.
func TestSignInRefusesAnotherServersResource(t *testing.T) {
	const other = "https://other.example/mcp"
	mcpURL, _, asked := resourceServers(t, func(string) string { return other })
	opened := false
	_, err := Login(t.Context(), "evil", mcpURL, LoginOptions{Open: func(string) error { opened = true; return nil }, Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), mcpURL) {
		t.Errorf("auth login: %v; want a refusal naming %s and %s", err, other, mcpURL)
	}
	_, err = BeginWeb(t.Context(), "evil", mcpURL, "https://hub.example/auth/callback/evil", LoginOptions{})
	if err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), mcpURL) {
		t.Errorf("per-user sign-in: %v; want a refusal naming %s and %s", err, other, mcpURL)
	}
	if n := asked.Load(); n != 0 || opened {
		t.Errorf("the authorization server the metadata names got %d requests, browser opened: %v; want none", n, opened)
	}
}

// Metadata naming the server's URL with a trailing slash, in capitals
// (scheme and host), or naming its origin, is the server's: the sign-in
// goes ahead, asking for the resource as the metadata names it.
func TestSignInTakesItsResourceSpelledOtherwise(t *testing.T) {
	for name, spell := range map[string]func(string) string{
		"a trailing slash":      func(u string) string { return u + "/" },
		"scheme and host upper": func(u string) string { return strings.ToUpper(strings.TrimSuffix(u, "/mcp")) + "/mcp" },
		"the origin":            func(u string) string { return strings.TrimSuffix(u, "/mcp") },
	} {
		t.Run(name, func(t *testing.T) {
			mcpURL, _, asked := resourceServers(t, spell)
			f, err := BeginWeb(t.Context(), "docs", mcpURL, "https://hub.example/auth/callback/docs", LoginOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(f.AuthURL)
			if got, want := u.Query().Get("resource"), spell(mcpURL); got != want || asked.Load() == 0 {
				t.Errorf("resource %q asked for, %d requests to the authorization server; want %q and some", got, asked.Load(), want)
			}
		})
	}
}

// A sign-in on file made for another resource (by a version that took
// whatever the metadata named) is no sign-in: its token is not sent.
func TestSourceRefusesSignInForAnotherResource(t *testing.T) {
	store := NewStore(t.TempDir())
	const serverURL = "https://mcp.example.com/mcp"
	for resource, ok := range map[string]bool{"https://other.example/mcp": false, "https://mcp.example.com": true, "": true} {
		if err := store.Save(&Record{Server: "web", URL: serverURL, Resource: resource, AccessToken: "secret"}); err != nil {
			t.Fatal(err)
		}
		_, err := NewSource(store, "web", serverURL)
		if ok && err != nil || !ok && (!errors.Is(err, ErrNoToken) || !errors.Is(err, ErrOtherResource) || !strings.Contains(err.Error(), resource)) {
			t.Errorf("a sign-in for resource %q: %v; want it used: %v", resource, err, ok)
		}
	}
}
