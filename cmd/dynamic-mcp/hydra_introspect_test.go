package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// TestOpaqueCallersSignedInWithHydra serves the hub over HTTP as an
// OAuth 2.1 resource server of ory/hydra v2.3.0 with its default, opaque,
// access tokens, which the hub checks at hydra's introspection endpoint
// (RFC 7662, http.auth.introspection): two users each see the profile
// their claims (ext.groups, where hydra's introspection puts a session's
// claims) choose, their calls are theirs in the audit trail, a token for
// another audience is refused 401 invalid_token, and a token revoked at
// hydra stops working once the hub's cached answer expires (cache_ttl).
func TestOpaqueCallersSignedInWithHydra(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	bin, hub, audience := hydraAndHub(t)
	hubURL := hub.URL
	const other = "https://other.example/mcp"
	h := startHydraTokens(t, bin, map[string]jwtUser{
		"alice": {name: "Alice", groups: []string{"admins"}},
		"bob":   {name: "Bob", groups: []string{"docs"}},
	}, "", "opaque")
	h.addTeamApp(t, audience, other)

	const ttl = 2 * time.Second
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	base, stderr := startHTTPHub(t, fmt.Sprintf(`mode: flat
audit: { path: %q }
profiles:
  admin: { groups: [f], mode: flat }
  reader: { groups: [f], mode: dynamic }
http:
  auth:
    issuer: %s/
    audience: %s
    claims: { name: ext.name, groups: ext.groups }
    introspection: { url: %s/admin/oauth2/introspect, cache_ttl: %s }
    profiles:
      - { claim: ext.groups, value: admins, profile: admin }
    default_profile: reader
groups:
  f: { description: fake, command: %q }
`, auditPath, h.public, audience, h.adminURL, ttl, fakeBin))
	hub.behind(base)

	alice := h.teamToken(t, "alice", audience)
	bob := h.teamToken(t, "bob", audience)
	if strings.Count(alice, ".") == 2 {
		t.Fatalf("hydra's token is a JWT, want an opaque one: %s", alice)
	}
	_, bc := checkTeamCallers(t, audience, "opaque token", alice, bob, auditPath, stderr)

	meta := `Bearer resource_metadata="` + hubURL + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	forOther := h.teamToken(t, "alice", other)
	if code, header := (&bearerSession{t: t, url: audience, token: forOther}).refused(); code != http.StatusUnauthorized ||
		!strings.HasPrefix(header, meta) || !strings.Contains(header, "not for this resource") {
		t.Errorf("a token for another audience: %d %q, want 401 %q", code, header, meta)
	}

	// Alice's token is revoked at hydra (RFC 7009): within the TTL of the
	// hub's last answer about it, it is refused.
	resp, err := http.PostForm(h.public+"/oauth2/revoke", url.Values{"token": {alice}, "client_id": {"team-app"}, "client_secret": {"team-app-secret-0123"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke at hydra: %s", resp.Status)
	}
	// The hub's answer about it was cached before the revocation, so a
	// request sent a TTL after the revocation must find it expired: the
	// check is on when each request was sent, which load cannot move.
	expired := time.Now().Add(ttl)
	var header string
	await.Costly(t, ttl+3*time.Second, "alice's revoked token refused", func() bool {
		var code int
		sent := time.Now()
		code, header = (&bearerSession{t: t, url: audience, token: alice}).refused()
		if code == http.StatusOK && sent.After(expired) { // a 503 of a slow hydra is asked again
			t.Fatalf("the revoked token accepted (%d) %s after the TTL %s of the hub's last answer", code, sent.Sub(expired), ttl)
		}
		return code == http.StatusUnauthorized
	})
	if !strings.Contains(header, "not active") {
		t.Errorf("the revoked token refused with %q, want not active", header)
	}
	if _, got := bc.post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); !strings.Contains(got, "call_dynamic_tool") {
		t.Errorf("bob after alice's revocation: %s", got)
	}
}
