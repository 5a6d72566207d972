package config

import (
	"strings"
	"testing"
	"time"
)

// http.auth is read with its defaults, names profiles the config has, and
// refuses what would make the hub accept tokens it should not: an issuer
// or audience that is not https (but on loopback), a missing one, an
// unknown key; each error names its line.
func TestHTTPAuth(t *testing.T) {
	const rest = `
profiles:
  admin: { groups: [g] }
  reader: { groups: [g] }
groups:
  g: { description: d, command: echo }
`
	cfg, err := Parse("c.yaml", strings.NewReader(`http:
  auth:
    issuer: https://id.example/
    audience: https://hub.example/mcp
    profiles:
      - { claim: groups, value: admins, profile: admin }
      - { claim: ext.team, value: docs, profile: reader }
`+rest))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.HTTP.Auth
	if !a.Enabled() || a.Issuer != "https://id.example/" || a.Audience != "https://hub.example/mcp" || a.JWKSRefresh != DefaultJWKSRefresh ||
		a.Claims != (AuthClaims{Subject: "sub", Name: "name", Groups: "groups"}) || len(a.Profiles) != 2 || a.Profiles[1].Claim != "ext.team" || a.DefaultProfile != "" {
		t.Errorf("parsed: %+v", a)
	}
	cfg, err = Parse("c.yaml", strings.NewReader(`http:
  auth: { issuer: "http://127.0.0.1:4444/", audience: "http://localhost:8080/mcp", claims: { subject: email, groups: ext.groups }, default_profile: reader, jwks_refresh: 1m, scopes: [mcp] }
`+rest))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.HTTP.Auth; a.Claims.Subject != "email" || a.Claims.Groups != "ext.groups" || a.Claims.Name != "name" || a.DefaultProfile != "reader" || a.JWKSRefresh != time.Minute || len(a.Scopes) != 1 {
		t.Errorf("parsed: %+v", a)
	}
	if cfg, _ := Parse("c.yaml", strings.NewReader(rest)); cfg.HTTP.Auth.Enabled() {
		t.Error("no http.auth: enabled")
	}
	for _, c := range []struct{ auth, want string }{
		{`{ issuer: "http://id.example/", audience: "https://hub.example/mcp" }`, "c.yaml:2: http.auth.issuer: must be https://"},
		{`{ issuer: "https://id.example/", audience: "http://hub.example/mcp" }`, "c.yaml:2: http.auth.audience: must be https://"},
		{`{ issuer: "https://id.example/?x=1", audience: "https://hub.example/mcp" }`, "http.auth.issuer: must be an absolute"},
		{`{ audience: "https://hub.example/mcp" }`, "http.auth.issuer: is required"},
		{`{ issuer: "https://id.example/" }`, "http.auth.audience: is required"},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", issuers: x }`, "http.auth.issuers: unknown key"},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", profiles: [{ claim: groups, value: a, profile: nope }] }`, `http.auth.profiles[0].profile: names profile "nope"`},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", profiles: [{ claim: groups, value: a }] }`, `http.auth.profiles[0]: needs claim and profile`},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", default_profile: nope }`, `http.auth.default_profile: names profile "nope"`},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", claims: { groups: "ext..g" } }`, `http.auth.claims.groups: must be a claim name`},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", jwks_refresh: 0s }`, `http.auth.jwks_refresh: must be a positive duration`},
		{`{ issuer: "https://id.example/", audience: "https://hub.example/mcp", scopes: ["a b"] }`, `http.auth.scopes: a scope is a word`},
	} {
		_, err := Parse("c.yaml", strings.NewReader("http:\n  auth: "+c.auth+"\n"+rest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.auth, err, c.want)
		}
	}
}

// A static token may not be named like the callers of http.auth, whose
// credential is jwt:SUBJECT: it would reach their sessions.
func TestTokenNameNotJWT(t *testing.T) {
	_, err := Parse("c.yaml", strings.NewReader("http:\n  tokens: { \"jwt:alice\": token-of-mallory-0123 }\ngroups:\n  g: { description: d, command: echo }\n"))
	if err == nil || !strings.Contains(err.Error(), "must not begin with jwt:") {
		t.Errorf("a token named jwt:alice: %v", err)
	}
}
