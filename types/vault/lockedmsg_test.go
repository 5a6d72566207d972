package vault

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A state directory sealed under DYNAMIC_MCP_VAULT_KEY, opened later
// without it where the keychain does not answer (a server, a container):
// the error does not claim the keychain holds the key, but names both
// places it may be and that DYNAMIC_MCP_VAULT_KEY is not set.
func TestNoKeyErrorNamesTheEnvironmentVariable(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("A", 43) + "="
	v1, err := Open(context.Background(), Options{Dir: dir, Keychain: &memKeychain{}, Getenv: func(n string) string {
		if n == EnvKey {
			return key
		}
		return ""
	}})
	if err != nil || v1.Source != "env" {
		t.Fatalf("Open = %v, %v", v1, err)
	}
	if err := NewSecrets(dir, v1).Set("TOKEN", "sealed-under-the-env-key"); err != nil {
		t.Fatal(err)
	}
	stuck := stuckKeychain{release: make(chan struct{})}
	defer close(stuck.release)
	_, err = Open(context.Background(), Options{Dir: dir, Keychain: stuck, Wait: 50 * time.Millisecond, Getenv: noEnv})
	if err == nil {
		t.Fatal("Open without the key succeeded")
	}
	for _, want := range []string{EnvKey + " is not set", "unlock", "may hold"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
