package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

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
	cfg, err := Parse("c.yaml", strings.NewReader(src))
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
	cfg, err = Parse("c.yaml", strings.NewReader(strings.Replace(src, "Bearer ${secret:API_KEY}", "Bearer ${secret:MISSING}", 1)))
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

// A value is found however a server's JSON encoder escapes it: Go's
// (\u0026 for "&"), JavaScript's and Python's ("&" as is, "\"" escaped),
// PHP's ("/" as "\/").
func TestRedactSecretsAsEncodersEscape(t *testing.T) {
	var c Config
	secret := `tok/"a&b"+9Zq==`
	c.setSecretValues(map[string]string{"K": secret}, map[string][]string{"K": {"x"}})
	for name, in := range map[string]string{
		"raw":        "echo " + secret,
		"go":         `{"text":"tok/\"a\u0026b\"+9Zq=="}`,
		"javascript": `{"text":"tok/\"a&b\"+9Zq=="}`,
		"php":        `{"text":"tok\/\"a&b\"+9Zq=="}`,
		"go, php":    `{"text":"tok\/\"a\u0026b\"+9Zq=="}`,
	} {
		got := string(c.RedactSecrets([]byte(in)))
		if !strings.Contains(got, "[secret:K]") || strings.Contains(got, "9Zq") {
			t.Errorf("%s: RedactSecrets(%s) = %s", name, in, got)
		}
	}
}

// A value is found escaped at any depth a JSON-in-text result reaches (a
// tool's JSON quoted by the server's answer: twice; quoted again: three
// times), however each encoder escapes it, and as a URL's query escapes it.
func TestRedactSecretsAtAnyDepth(t *testing.T) {
	var c Config
	secret := `tok/"a&b"\+9Zq==`
	c.setSecretValues(map[string]string{"K": secret}, map[string][]string{"K": {"x"}})
	quote := func(s string, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	}
	for name, in := range map[string]string{
		"twice":              quote(`{"key":`+quote(secret, false)+`}`, false),
		"three times":        quote(quote(`{"key":`+quote(secret, false)+`}`, false), false),
		"three times, go":    quote(quote(`{"key":`+quote(secret, true)+`}`, true), true),
		"four times, mixed":  quote(quote(quote(`{"key":`+quote(secret, true)+`}`, false), true), false),
		"twice, php":         strings.ReplaceAll(quote(strings.ReplaceAll(quote(secret, false), "/", `\/`), false), "/", `\/`),
		"a url's query":      "Post \"https://h/mcp?key=" + url.QueryEscape(secret) + "\": connection refused",
		"a url's path":       "https://h/" + url.PathEscape(secret) + "/mcp",
		"a url's query, raw": "https://h/mcp?key=" + secret,
	} {
		got := string(c.RedactSecrets([]byte(in)))
		if !strings.Contains(got, "[secret:K]") || strings.Contains(got, "9Zq") {
			t.Errorf("%s: RedactSecrets(%s) = %s", name, in, got)
		}
	}
	// A value no encoder changes has one form, whatever the depth.
	if forms := secretForms("plain-secret-2"); len(forms) != 1 {
		t.Errorf("forms of a plain value: %q", forms)
	}
}
