package vault

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

func envOf(key []byte) func(string) string {
	s := base64.StdEncoding.EncodeToString(key)
	return func(name string) string {
		if name == EnvKey {
			return s
		}
		return ""
	}
}

// openSharedSecrets is a replica's secrets in the store at url, sealed
// under key (its DYNAMIC_MCP_VAULT_KEY), and the store, closed when t
// ends.
func openSharedSecrets(t *testing.T, url string, key []byte) (*Secrets, *pgstore.Store) {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	v, err := OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: envOf(key)})
	if err != nil {
		t.Fatal(err)
	}
	return NewSharedSecrets(db, v), db
}

// Secrets on a shared store: one replica sets, another (its own state
// directory, the same DYNAMIC_MCP_VAULT_KEY) reads; no row of the
// database holds a value in plaintext; a removal is seen by both; each
// change is notified on SecretsChannel.
func TestSharedSecretsAcrossReplicas(t *testing.T) {
	url := pgtest.Start(t)
	key := bytes.Repeat([]byte{9}, KeySize)
	a, _ := openSharedSecrets(t, url, key)
	b, _ := openSharedSecrets(t, url, key)
	notified := make(chan struct{}, 8)
	watchDB, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer watchDB.Close()
	watchCtx, stopWatch := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchDB.Watch(watchCtx, SecretsChannel, func() {
			select {
			case notified <- struct{}{}:
			default:
			}
		})
	}()
	defer func() { stopWatch(); <-watched }()
	// The watch is listening once a change is heard: change a probe until
	// one is (a LISTEN not up yet misses it), then take the probe away and
	// hear that too, so that what is heard next is the change below.
	heard := func(change func()) bool {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			change()
			select {
			case <-notified:
				return true
			case <-time.After(100 * time.Millisecond):
			}
		}
		return false
	}
	if !heard(func() { a.Set("PROBE", "x") }) || !heard(func() { a.Delete("PROBE") }) {
		t.Fatal("the watch heard no change within 30s")
	}

	if err := a.Set("API_KEY", "sk-shared-value-123"); err != nil {
		t.Fatal(err)
	}
	if m, err := b.All(); err != nil || m["API_KEY"] != "sk-shared-value-123" {
		t.Fatalf("the other replica reads %v, %v", m, err)
	}
	select {
	case <-notified:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no notification of the change")
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var raw []byte
	if err := conn.QueryRow(t.Context(), `SELECT value FROM dynamic_mcp_state WHERE ns = $1 AND key = $2`, SecretNS, "API_KEY").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("sk-shared-value-123")) || !Sealed(raw) {
		t.Fatalf("the database holds %q", raw)
	}
	es, err := b.Entries()
	if err != nil || es["API_KEY"].Set.IsZero() {
		t.Fatalf("entries %v, %v", es, err)
	}
	if had, err := b.Delete("API_KEY"); err != nil || !had {
		t.Fatalf("Delete = %v, %v", had, err)
	}
	if had, err := a.Delete("API_KEY"); err != nil || had {
		t.Fatalf("second Delete = %v, %v", had, err)
	}
	if names, err := a.Names(); err != nil || len(names) != 0 {
		t.Fatalf("names after delete: %v, %v", names, err)
	}
}

// A replica with another key is refused at once, with an error that names
// where its key came from; without DYNAMIC_MCP_VAULT_KEY, OpenShared says
// to set it.
func TestSharedVaultWrongKey(t *testing.T) {
	url := pgtest.Start(t)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1shared, err := OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: envOf(bytes.Repeat([]byte{1}, KeySize))})
	if err != nil {
		t.Fatal(err)
	}
	// A store sealed into before it had a check value: the first key
	// to check it is tried on what it holds before it leaves its own.
	if err := NewSharedSecrets(db, v1shared).Set("OLD", "sealed-before-the-check"); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(t.Context(), checkNS, checkKey); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: envOf(bytes.Repeat([]byte{2}, KeySize))}); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("another key on a store without a check value: %v", err)
	}
	if _, err := OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: envOf(bytes.Repeat([]byte{1}, KeySize))}); err != nil {
		t.Fatalf("the store's key on a store without a check value: %v", err)
	}
	_, err = OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: envOf(bytes.Repeat([]byte{2}, KeySize))})
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "the "+EnvKey+" environment variable") {
		t.Fatalf("another key: %v", err)
	}
	_, err = OpenShared(t.Context(), db, Options{Dir: t.TempDir(), Getenv: noEnv, Keychain: &memKeychain{}})
	if err == nil || !strings.Contains(err.Error(), "set "+EnvKey) {
		t.Fatalf("no env key: %v", err)
	}
	// A blob sealed under one key and opened under another names the
	// second key's source.
	v1, _ := New(bytes.Repeat([]byte{1}, KeySize), "env")
	v2, _ := New(bytes.Repeat([]byte{2}, KeySize), "keychain")
	if _, err := v2.Open(v1.Seal([]byte("x"), "l"), "l"); err == nil || !strings.Contains(err.Error(), "the OS keychain") {
		t.Fatalf("open under another key: %v", err)
	}
}
