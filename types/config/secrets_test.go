package config

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// ${secret:NAME} reads the vault of the config's state directory in env,
// headers and args; a name not set is an error that names it.
func TestSecretReferences(t *testing.T) {
	state := t.TempDir()
	key := bytes.Repeat([]byte{3}, vault.KeySize)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	v, _ := vault.New(key, "test")
	if err := vault.NewSecrets(state, v).Set("API_KEY", "sk-vaulted-123"); err != nil {
		t.Fatal(err)
	}
	src := `
groups:
  web:
    description: x
    servers:
      remote: { url: "https://h.example/mcp", headers: { Authorization: "Bearer ${secret:API_KEY}" } }
      local: { command: srv, args: ["--key", "${secret:API_KEY}"], env: { KEY: "${secret:API_KEY}" } }
      signin: { url: "https://s.example/mcp", oauth: { client_id: hub, client_secret: "${secret:API_KEY}" } }
state_dir: ` + state + "\n"
	cfg, err := Loader{Secrets: secrets.Source{}}.Parse("c.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	srv := cfg.Groups[0].Servers
	if got := srv[0].Headers["Authorization"]; got != "Bearer sk-vaulted-123" {
		t.Errorf("header = %q", got)
	}
	if got := srv[1].Args; len(got) != 2 || got[1] != "sk-vaulted-123" {
		t.Errorf("args = %q", got)
	}
	if got := srv[2].OAuth; got.ClientSecret != "sk-vaulted-123" {
		t.Errorf("oauth.client_secret = %+v", got)
	}
	if got := srv[1].Env["KEY"]; got != "sk-vaulted-123" {
		t.Errorf("env = %q", got)
	}
	if uses := cfg.SecretUses["API_KEY"]; len(uses) != 4 {
		t.Errorf("uses of API_KEY = %q, want its four keys", uses)
	}
	// A missing secret holds up its server alone, with the command that
	// sets it.
	cfg, err = Loader{Secrets: secrets.Source{}}.Parse("c.yaml", strings.NewReader(strings.Replace(src, "Bearer ${secret:API_KEY}", "Bearer ${secret:MISSING}", 1)))
	if err != nil {
		t.Fatalf("a missing secret failed the config: %v", err)
	}
	abs, _ := filepath.Abs("c.yaml")
	want := "secret MISSING is not set (run: dynamic-mcp secret set MISSING -c " + abs + ")"
	for i, s := range cfg.Groups[0].Servers {
		if got := s.Unavailable(); (i == 0) != (got != nil) || got != nil && got.Error() != want {
			t.Errorf("server %d unavailable: %v, want %q on the first only", i, got, want)
		}
	}
}

// RedactSecrets replaces each used secret's value, raw or as JSON escapes
// it, with [secret:NAME]; a value too short to be told from text is left.
func TestRedactSecrets(t *testing.T) {
	var c Config
	c.setSecretValues(map[string]string{"A": `sk-"quoted"-1`, "B": "plain-secret-2", "PIN": "12", "UNUSED": "unused-value"},
		map[string][]string{"A": {"x"}, "B": {"y"}, "PIN": {"z"}})
	in := `{"text":"a sk-\"quoted\"-1 b plain-secret-2 12 unused-value"}`
	want := `{"text":"a [secret:A] b [secret:B] 12 unused-value"}`
	if got := string(c.RedactSecrets([]byte(in))); got != want {
		t.Errorf("RedactSecrets = %s\nwant %s", got, want)
	}
	var none *Config
	if got := string(none.RedactSecrets([]byte(in))); got != in {
		t.Errorf("nil config changed text: %s", got)
	}
}
