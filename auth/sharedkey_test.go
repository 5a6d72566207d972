package auth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// A replica whose DYNAMIC_MCP_VAULT_KEY is not the others' is refused at
// its first read of the shared store, with an error that names the key's
// source, not a record that fails to open.
func TestSharedStoreRefusesAnotherKey(t *testing.T) {
	url := pgtest.Start(t)
	one := replica(t, url)
	if err := one.Save(&Record{Server: "srv", URL: "https://mcp.example/", AccessToken: "tok"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xee}, vault.KeySize)))
	other := replica(t, url)
	_, err := other.Load("srv", "https://mcp.example/")
	if !errors.Is(err, vault.ErrWrongKey) || !strings.Contains(err.Error(), "the "+vault.EnvKey+" environment variable") {
		t.Fatalf("another key: %v", err)
	}
	if _, err := other.List(); !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("another key's list: %v", err)
	}
}
