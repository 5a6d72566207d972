package config

import (
	"strings"
	"testing"
)

func TestParseServerAuth(t *testing.T) {
	cfg, err := Parse("c.yaml", strings.NewReader(`
groups:
  docs:
    description: d
    servers:
      mine: { url: "https://docs.example/mcp", auth: per-user }
      ours: { url: "https://docs.example/mcp2" }
`))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Groups[0].Servers
	if !s[0].PerUser() || s[1].PerUser() {
		t.Errorf("auth: %q, %q; want per-user, shared", s[0].Auth, s[1].Auth)
	}
	for in, want := range map[string]string{
		`{ url: "https://x.example/mcp", auth: mine }`: `must be shared or per-user, not "mine"`,
		`{ command: cat, auth: per-user }`:             "per-user only applies to url: servers",
	} {
		_, err := Parse("c.yaml", strings.NewReader("groups:\n  g:\n    description: d\n    servers:\n      s: "+in+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", in, err, want)
		}
	}
}
