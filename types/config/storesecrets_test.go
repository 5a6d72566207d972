package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// With store:, ${secret:NAME} is the store's secret (not the state
// directory's of the same name), but store:'s own reference is the state
// directory's: the store cannot hold the URL that opens it. The values
// read from the store are redacted as the file's are. Under another
// DYNAMIC_MCP_VAULT_KEY the config fails, naming the key's source.
func TestStoreSecretReferences(t *testing.T) {
	url := pgtest.Start(t)
	state := t.TempDir()
	key := bytes.Repeat([]byte{4}, vault.KeySize)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	fileVault, _ := vault.New(key, "env")
	file := vault.NewSecrets(state, fileVault)
	if err := file.Set("DB_URL", url); err != nil {
		t.Fatal(err)
	}
	if err := file.Set("API_KEY", "sk-from-the-state-dir"); err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := vault.OpenShared(t.Context(), db, vault.Options{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	load := Loader{Secrets: secrets.Source{}}
	src := `
groups:
  web:
    description: x
    url: "https://h.example/mcp"
    headers: { Authorization: "Bearer ${secret:API_KEY}" }
store: ${secret:DB_URL}
state_dir: ` + state + "\n"
	if cfg, err := load.Parse("c.yaml", strings.NewReader(src)); err != nil || cfg.Groups[0].Servers[0].Unavailable() == nil ||
		!strings.Contains(cfg.Groups[0].Servers[0].Unavailable().Error(), "secret API_KEY is not set") {
		t.Fatalf("a secret only on file, with store: %v", err)
	}
	if err := vault.NewSharedSecrets(db, v).Set("API_KEY", "sk-from-the-store-42"); err != nil {
		t.Fatal(err)
	}
	cfg, err := load.Parse("c.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Groups[0].Servers[0].Headers["Authorization"]; got != "Bearer sk-from-the-store-42" {
		t.Errorf("header = %q", got)
	}
	if cfg.Store != url {
		t.Errorf("store = %q, want the state directory's DB_URL", cfg.Store)
	}
	if got := cfg.RedactText("echo sk-from-the-store-42"); got != "echo [secret:API_KEY]" {
		t.Errorf("redacted: %q", got)
	}
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, vault.KeySize)))
	// DB_URL is sealed under the first key: give the URL plainly.
	_, err = load.Parse("c.yaml", strings.NewReader(strings.Replace(src, "${secret:DB_URL}", url, 1)))
	if err == nil || !strings.Contains(err.Error(), "reading the store's secrets") || !strings.Contains(err.Error(), vault.EnvKey+" environment variable") {
		t.Fatalf("another key: %v", err)
	}
}
