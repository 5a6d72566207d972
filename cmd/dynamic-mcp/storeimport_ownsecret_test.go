package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// store import of the config's own state directory leaves the secret that
// only store: itself uses (the database's password) where it is: the store
// cannot hold what opens it, and a copy there would make `secret list`
// call it "used at store" instead of "kept in the state directory".
func TestStoreImportLeavesStoresOwnSecret(t *testing.T) {
	url := pgtest.Start(t)
	state := t.TempDir()
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, vault.KeySize)))
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	src := fmt.Sprintf("state_dir: %s\nstore: postgres://${secret:DB_ADDR}\ngroups:\n  a: {description: x, command: srv, env: {KEY: \"${secret:API_KEY}\"}}\n", state)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	run1 := func(stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	if out := run1(strings.TrimPrefix(url, "postgres://")+"\n", "secret", "set", "DB_ADDR", "-c", cfg); !strings.Contains(out, "secret DB_ADDR set in the state directory (store: itself uses it)") {
		t.Fatalf("secret set of store:'s own secret does not say where it went:\n%s", out)
	}
	out := run1("", "store", "import", "-c", cfg)
	if !strings.Contains(out, "secret DB_ADDR: left in the state directory (store: itself uses it)") || !strings.Contains(out, "0 copied") {
		t.Fatalf("store import:\n%s", out)
	}
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if names, err := db.Keys(t.Context(), vault.SecretNS); err != nil || len(names) != 0 {
		t.Fatalf("secrets in the store after the import: %v %v", names, err)
	}
	if out := run1("", "secret", "list", "-c", cfg); !strings.Contains(out, "DB_ADDR\tkept in the state directory") {
		t.Fatalf("secret list:\n%s", out)
	}
}
