package vault

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

type memKeychain struct {
	mu    sync.Mutex
	items map[string]string
	err   error
}

func (m *memKeychain) Get(s, u string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return "", m.err
	}
	v, ok := m.items[s+"\x00"+u]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

func (m *memKeychain) Set(s, u, p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if m.items == nil {
		m.items = map[string]string{}
	}
	m.items[s+"\x00"+u] = p
	return nil
}

// stuckKeychain never answers, as a keychain waiting on a dialog.
type stuckKeychain struct{ release chan struct{} }

func (k stuckKeychain) Get(string, string) (string, error) { <-k.release; return "", ErrNotFound }
func (k stuckKeychain) Set(string, string, string) error   { <-k.release; return nil }

func noEnv(string) string { return "" }

func TestSealOpen(t *testing.T) {
	v, err := New(bytes.Repeat([]byte{7}, KeySize), "test")
	if err != nil {
		t.Fatal(err)
	}
	b := v.Seal([]byte("tok-123"), "a")
	if bytes.Contains(b, []byte("tok-123")) || !Sealed(b) {
		t.Fatalf("sealed blob %q", b)
	}
	if p, err := v.Open(b, "a"); err != nil || string(p) != "tok-123" {
		t.Fatalf("Open = %q, %v", p, err)
	}
	if _, err := v.Open(b, "b"); err == nil {
		t.Fatal("a blob opened under another label")
	}
	if _, err := v.Open([]byte(`{"x":1}`), "a"); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("plaintext: %v", err)
	}
}

func TestKeyInKeychain(t *testing.T) {
	dir := t.TempDir()
	kc := &memKeychain{}
	v1, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv})
	if err != nil || v1.Source != "keychain" {
		t.Fatalf("Open = %v, %v", v1, err)
	}
	if len(kc.items) != 1 {
		t.Fatalf("keychain items %v", kc.items)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
		t.Fatal("a key file was written though the keychain answered")
	}
	v2, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v2.Open(v1.Seal([]byte("x"), "l"), "l"); err != nil || string(p) != "x" {
		t.Fatalf("reopened vault: %q, %v", p, err)
	}
}

func TestFallbackFile(t *testing.T) {
	for name, kc := range map[string]Keychain{
		"unreachable": &memKeychain{err: errors.New("dbus: no session bus")},
		"stuck":       stuckKeychain{release: make(chan struct{})},
	} {
		t.Run(name, func(t *testing.T) {
			if s, ok := kc.(stuckKeychain); ok {
				defer close(s.release)
			}
			dir := t.TempDir()
			var log strings.Builder
			lg := slog.New(slog.NewTextHandler(&log, nil))
			v1, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Wait: 50 * time.Millisecond, Getenv: noEnv, Logger: lg})
			if err != nil || v1.Source != "file" {
				t.Fatalf("Open = %v, %v", v1, err)
			}
			if !strings.Contains(log.String(), "no OS keychain answered") {
				t.Fatalf("log %q", log.String())
			}
			fi, err := os.Stat(filepath.Join(dir, KeyFile))
			if err != nil || fi.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
				t.Fatalf("key file: %v, %v", fi, err)
			}
			v2, err := Open(context.Background(), Options{Dir: dir, Keychain: &memKeychain{}, Getenv: noEnv})
			if err != nil || v2.Source != "file" {
				t.Fatalf("reopen = %v, %v", v2, err)
			}
			if p, err := v2.Open(v1.Seal([]byte("x"), "l"), "l"); err != nil || string(p) != "x" {
				t.Fatalf("reopened vault: %q, %v", p, err)
			}
		})
	}
}

func TestEnvKey(t *testing.T) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, KeySize))
	env := func(n string) string {
		if n == EnvKey {
			return k
		}
		return ""
	}
	v, err := Open(context.Background(), Options{Dir: t.TempDir(), Keychain: stuckKeychain{}, Getenv: env})
	if err != nil || v.Source != "env" {
		t.Fatalf("Open = %v, %v", v, err)
	}
	bad := func(string) string { return "short" }
	if _, err := Open(context.Background(), Options{Dir: t.TempDir(), Getenv: bad}); err == nil || !strings.Contains(err.Error(), EnvKey) {
		t.Fatalf("bad env key: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	v, _ := New(bytes.Repeat([]byte{2}, KeySize), "test")
	s := NewSecrets(dir, v)
	if err := s.Set("GITHUB_TOKEN", "ghp_value1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("B", "value2"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, SecretsFile))
	if bytes.Contains(b, []byte("ghp_value1")) || bytes.Contains(b, []byte("GITHUB_TOKEN")) {
		t.Fatal("the secrets file holds a secret or its name in plaintext")
	}
	if names, err := NewSecrets(dir, v).Names(); err != nil || strings.Join(names, ",") != "B,GITHUB_TOKEN" {
		t.Fatalf("Names = %v, %v", names, err)
	}
	if had, err := s.Delete("B"); !had || err != nil {
		t.Fatalf("Delete = %v, %v", had, err)
	}
	if m, err := s.All(); err != nil || len(m) != 1 || m["GITHUB_TOKEN"] != "ghp_value1" {
		t.Fatalf("All = %v, %v", m, err)
	}
}

// A process says its key is in a file once, to the first Open with a
// logger, however many Opens there are (the config's, the token store's).
func TestFileKeySaidOnce(t *testing.T) {
	dir := t.TempDir()
	kc := &memKeychain{err: errors.New("no keychain")}
	if _, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	lg := slog.New(slog.NewTextHandler(&log, nil))
	for range 3 {
		if _, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv, Logger: lg}); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(log.String(), "the data key is in a file"); n != 1 {
		t.Fatalf("said %d times:\n%s", n, log.String())
	}
}

// A keychain that holds the key of what is sealed but does not answer
// (locked, a dialog nobody sees) is not taken for one with no key: Open
// fails, within its bound, rather than make a new key in a file that
// would leave the sealed secrets unreadable for good.
func TestLockedKeychainKeepsSealedData(t *testing.T) {
	dir := t.TempDir()
	kc := &memKeychain{}
	v1, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv})
	if err != nil || v1.Source != "keychain" {
		t.Fatalf("Open = %v, %v", v1, err)
	}
	if err := NewSecrets(dir, v1).Set("TOKEN", "sealed-before-the-lock"); err != nil {
		t.Fatal(err)
	}
	stuck := stuckKeychain{release: make(chan struct{})}
	defer close(stuck.release)
	_, err = Open(context.Background(), Options{Dir: dir, Keychain: stuck, Wait: 50 * time.Millisecond, Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "unlock") {
		t.Fatalf("Open with the keychain locked = %v, want an error saying to unlock it", err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); !os.IsNotExist(err) {
		t.Fatalf("a new key file was written: %v", err)
	}
	v2, err := Open(context.Background(), Options{Dir: dir, Keychain: kc, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := NewSecrets(dir, v2).All(); err != nil || m["TOKEN"] != "sealed-before-the-lock" {
		t.Fatalf("after the unlock: %v, %v", m, err)
	}
}

// A key file others can read, or one that is a symlink, is refused with
// what to do, not used: it would open the vault for whoever reads it.
func TestKeyFileMustBeOwnersOnly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes are Unix's")
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, KeySize)) + "\n"
	t.Run("world-readable", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, KeyFile), 0o644)
		_, err := Open(context.Background(), Options{Dir: dir, Keychain: &memKeychain{}, Getenv: noEnv})
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("Open = %v, want an error saying chmod 600", err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(elsewhere, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(dir, KeyFile)); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), Options{Dir: dir, Keychain: &memKeychain{}, Getenv: noEnv})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Open = %v, want an error saying not a regular file", err)
		}
	})
}

// TestOpensOldBlobs opens a record sealed by the vault before it sealed
// through types/seal: what is in users' state dirs still opens.
func TestOpensOldBlobs(t *testing.T) {
	old, _ := hex.DecodeString("646d7631ea9aa6ed772ab91e4ee0e2f07f9cfa74137d65b5bfc1a6adc28b2b9614163421ee0d256cfb57642272")
	v, err := New(bytes.Repeat([]byte{3}, KeySize), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Open(old, "signin/github"); err != nil || string(got) != `{"token":"x"}` {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := v.Open(old, "signin/other"); err == nil || !strings.Contains(err.Error(), "wrong vault key") {
		t.Fatalf("under another label: %v", err)
	}
}
