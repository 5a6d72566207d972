package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// http.auth.introspection turns on opaque tokens: its endpoint (or none,
// for the discovered one), the hub's client credentials, and a cache TTL
// of 60s by default that cannot be set past 10m.
func TestHTTPAuthIntrospection(t *testing.T) {
	const head = "http:\n  auth:\n    issuer: https://id.example/\n    audience: https://hub.example/mcp\n"
	const rest = "groups:\n  g: { description: d, command: echo }\n"
	t.Setenv("DMCP_TEST_INTROSPECT_SECRET", "s3cret-of-the-hub")
	cfg, err := Parse("c.yaml", strings.NewReader(head+"    introspection: { url: https://id.example/introspect, client_id: hub, client_secret: '${DMCP_TEST_INTROSPECT_SECRET}', cache_ttl: 5s }\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.HTTP.Auth.Introspection
	if in == nil || in.URL != "https://id.example/introspect" || in.ClientID != "hub" || in.ClientSecret != "s3cret-of-the-hub" || in.CacheTTL != 5*time.Second {
		t.Fatalf("parsed: %+v", in)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "introspection", in)
	if strings.Contains(b.String(), "s3cret") {
		t.Errorf("the secret is logged: %s", b.String())
	}
	for _, doc := range []string{"    introspection: {}\n", "    introspection:\n"} {
		cfg, err = Parse("c.yaml", strings.NewReader(head+doc+rest))
		if err != nil {
			t.Fatal(err)
		}
		if in := cfg.HTTP.Auth.Introspection; in == nil || in.URL != "" || in.CacheTTL != DefaultIntrospectionTTL {
			t.Errorf("%q: %+v", doc, in)
		}
	}
	if cfg, _ := Parse("c.yaml", strings.NewReader(head+rest)); cfg.HTTP.Auth.Introspection != nil {
		t.Error("introspection on without the key")
	}
	for _, c := range []struct{ in, want string }{
		{"{ url: http://id.example/introspect }", "c.yaml:5: http.auth.introspection.url: must be https://"},
		{"{ client_secret: x }", "c.yaml:5: http.auth.introspection.client_secret: needs client_id"},
		{"{ cache_ttl: 11m }", "http.auth.introspection.cache_ttl: must be at most 10m0s"},
		{"{ cache_ttl: 0s }", "http.auth.introspection.cache_ttl: must be a positive duration"},
		{"{ clientid: x }", "http.auth.introspection.clientid: unknown key"},
	} {
		_, err := Parse("c.yaml", strings.NewReader(head+"    introspection: "+c.in+"\n"+rest))
		if err == nil || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v, want %s", c.in, err, c.want)
		}
	}
}
