package vault

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

// inSecretService marks the test binary re-executed inside its own D-Bus
// session with gnome-keyring running.
const inSecretService = "VAULT_TEST_IN_SECRET_SERVICE"

// On Linux, against a real Secret Service (gnome-keyring in a private
// D-Bus session the test starts): the key goes into the keyring, no key
// file is written, sealed data holds no plaintext, and a second Open (a
// hub restarted) reads the key back. Without the binaries the test skips,
// unless CI is set.
func TestRealSecretService(t *testing.T) {
	if os.Getenv(inSecretService) != "" {
		secretServiceChild(t)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("the Secret Service is Linux's")
	}
	var missing []string
	for _, bin := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run this test: %s missing (apt-get install gnome-keyring dbus-daemon)", strings.Join(missing, ", "))
		}
		t.Skipf("no %s: apt-get install gnome-keyring to run this test", strings.Join(missing, ", "))
	}
	home := t.TempDir() // the keyring's files, not the user's
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "dbus-run-session", "--", "sh", "-c",
		`printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" -test.run '^TestRealSecretService$' -test.v`,
		os.Args[0])
	cmd.Env = append(os.Environ(), inSecretService+"=1", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR="+home, EnvKey+"=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRealSecretService") {
		t.Fatalf("in the Secret Service: %v\n%s", err, out)
	}
}

func secretServiceChild(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&log, nil))
	v1, err := Open(context.Background(), Options{Dir: dir, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Source != "keychain" {
		t.Fatalf("key source %q, want keychain; log:\n%s", v1.Source, log.String())
	}
	abs, _ := filepath.Abs(dir)
	item, err := keyring.Get(service, abs)
	if err != nil {
		t.Fatalf("the key is not in the Secret Service: %v", err)
	}
	if k, err := base64.StdEncoding.DecodeString(item); err != nil || len(k) != KeySize {
		t.Fatalf("the keyring item is not a key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); !os.IsNotExist(err) {
		t.Fatalf("a key file was written: %v", err)
	}
	if err := NewSecrets(dir, v1).Set("TOKEN", "secret-service-value-1"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); bytes.Contains(b, []byte("secret-service-value-1")) || bytes.Contains(b, []byte(item)) {
			t.Errorf("%s holds the secret or the key in plaintext", e.Name())
		}
	}
	v2, err := Open(context.Background(), Options{Dir: dir})
	if err != nil || v2.Source != "keychain" {
		t.Fatalf("reopen: %v, %v", v2, err)
	}
	if m, err := NewSecrets(dir, v2).All(); err != nil || m["TOKEN"] != "secret-service-value-1" {
		t.Fatalf("read back: %v, %v", m, err)
	}
	if strings.Contains(log.String(), "no OS keychain") {
		t.Errorf("fell back though the Secret Service answered:\n%s", log.String())
	}
}

// Without a Secret Service (no D-Bus session), Open falls back to the key
// file within its bound and says so.
func TestNoSecretServiceFallsBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Secret Service is Linux's")
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "none"))
	var log bytes.Buffer
	v, err := Open(context.Background(), Options{Dir: t.TempDir(), Getenv: noEnv, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil || v.Source != "file" || !strings.Contains(log.String(), "no OS keychain answered") {
		t.Fatalf("Open = %v, %v; log:\n%s", v, err, log.String())
	}
}
