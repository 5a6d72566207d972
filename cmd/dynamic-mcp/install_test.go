package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// installedHome is a home with cursor's fixture config (two servers of the
// user's) and a hub config to install; it returns the client config's
// path, its bytes and the hub config's path.
func installedHome(t *testing.T) (string, []byte, string) {
	t.Helper()
	home := t.TempDir()
	withHome(t, home)
	return fixtureHome(t, home)
}

// fixtureHome is installedHome in home, left out of the test's
// environment: for a test whose commands are processes given their home
// (runBinary), which can run beside the others.
func fixtureHome(t *testing.T, home string) (string, []byte, string) {
	t.Helper()
	return clientHome(t, home, "cursor")
}

// clientHome is fixtureHome with client's fixture config.
func clientHome(t *testing.T, home, client string) (string, []byte, string) {
	t.Helper()
	path, before := placeFixture(t, home, client)
	cfg := filepath.Join(home, "hub.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, before, cfg
}

// A record that cannot be written (its path is a link into a directory
// that does not exist: root writes through a read-only one) leaves the
// client config as it was:
// install writes its record before the config, so the config never holds
// only the dynamic-mcp entry with nothing to undo it.
func TestInstallWithoutRecordLeavesConfig(t *testing.T) {
	path, before, cfg := installedHome(t)
	rec := recordPath(path)
	os.MkdirAll(filepath.Dir(rec), 0o700)
	if err := os.Symlink(filepath.Join(t.TempDir(), "gone", "record.json"), rec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "install", "cursor", "-c", cfg, "--force"); err == nil {
		t.Fatal("install succeeded without its record")
	}
	if now, _ := os.ReadFile(path); string(now) != string(before) {
		t.Fatalf("install changed the config without a record of it:\n%s", now)
	}
}

// An install killed at any step leaves the user's servers recoverable:
// stopped before each of its 4 writes (the kill is a hook returning an
// error), a first install or one over an install, `uninstall` gives back
// the file byte for byte, and so does `install` again followed by
// `uninstall`: 16 cases.
func TestInstallInterruptedAtEachStep(t *testing.T) {
	for _, step := range []string{stepBackup, stepPending, stepConfig, stepRecord} {
		for _, then := range []string{"uninstall", "install again, uninstall"} {
			for _, over := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/over an install %v", step, then, over), func(t *testing.T) {
					path, before, cfg := installedHome(t)
					if over {
						if _, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force"); err != nil {
							t.Fatalf("first install: %v\n%s", err, errOut)
						}
						cfg2 := filepath.Join(filepath.Dir(cfg), "hub2.yaml")
						data, _ := os.ReadFile(cfg)
						os.WriteFile(cfg2, data, 0o600)
						cfg = cfg2 // so that the second install changes the file
					}
					installStep = func(s string) error {
						if s == step {
							return errors.New("killed")
						}
						return nil
					}
					t.Cleanup(func() { installStep = func(string) error { return nil } })
					_, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force")
					installStep = func(string) error { return nil }
					if err == nil {
						t.Fatal("install did not fail at its step")
					}
					if then != "uninstall" {
						if _, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force"); err != nil {
							t.Fatalf("install again: %v\n%s", err, errOut)
						}
					}
					out, uerr, err := runCLI(t, "uninstall", "cursor")
					now, _ := os.ReadFile(path)
					if string(now) != string(before) {
						t.Fatalf("after the interrupted install (%s) and uninstall (%v: %s%s) the file is:\n%s\nwant:\n%s", errOut, err, out, uerr, now, before)
					}
					if err != nil && (over || step != stepBackup && step != stepPending || then != "uninstall") {
						t.Errorf("uninstall: %v\n%s", err, uerr)
					}
					if recs, _ := filepath.Glob(filepath.Join(os.Getenv("DYNAMIC_MCP_HOME"), "installs", "*")); len(recs) != 0 {
						t.Errorf("records left after uninstall: %v", recs)
					}
					if strings.Contains(string(now), installName) {
						t.Error("the dynamic-mcp entry stayed")
					}
				})
			}
		}
	}
}

// Installs into one client config at once (two terminals, a script), each
// its own process, take turns: each reads the record and the file the one
// before it left, so uninstall still gives back the file as it was before
// the first, byte for byte. Without the lock a second install read the
// file the first had just written and recorded its dynamic-mcp entry as
// the user's servers.
func TestInstallsAtOnceTakeTurns(t *testing.T) {
	t.Parallel() // each command is a process given its home (runBinary)
	home := t.TempDir()
	path, before, cfg := fixtureHome(t, home)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		cfgI := filepath.Join(home, fmt.Sprintf("hub%d.yaml", i))
		data, _ := os.ReadFile(cfg)
		if err := os.WriteFile(cfgI, data, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			_, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfgI, "--force")
			if err != nil {
				err = fmt.Errorf("install %d: %v: %s", i, err, errOut)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if out, errOut, err := runBinary(t, home, "uninstall", "cursor"); err != nil {
		t.Fatalf("uninstall: %v\n%s%s", err, out, errOut)
	}
	if now, _ := os.ReadFile(path); string(now) != string(before) {
		t.Fatalf("after %d installs at once and an uninstall the file is:\n%s\nwant:\n%s", n, now, before)
	}
}

// `go run ./cmd/dynamic-mcp install` is refused: the binary it would write
// into the client's config is go run's build, gone when it exits (its
// first run) or from Go's build cache (later runs, Go 1.24 on).
func TestInstallRefusesGoRunBuild(t *testing.T) {
	for _, bin := range []string{
		filepath.Join("go-build1234", "b001", "exe", "dynamic-mcp"),
		filepath.Join("go-build", "47", "47a2ee0ec90e480ec3b8b212189d9d082ac2001279113996941545a9793823a0-d", "dynamic-mcp"),
	} {
		path, before, cfg := installedHome(t)
		bin := filepath.Join(t.TempDir(), bin)
		installExecutable = func() (string, error) { return bin, nil }
		t.Cleanup(func() { installExecutable = os.Executable })
		_, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force")
		if err == nil || !strings.Contains(errOut, "is a build of go run's, which go deletes (when it exits, or from its build cache); run go install ./cmd/dynamic-mcp and then $(go env GOPATH)/bin/dynamic-mcp install cursor") {
			t.Errorf("install from %s: %v\n%s", bin, err, errOut)
		}
		if now, _ := os.ReadFile(path); string(now) != string(before) {
			t.Errorf("config changed:\n%s", now)
		}
	}
}

// A read-only client config (chmod 444) or hub config is refused by what
// to do, before any backup or record: nothing pending is left, and no
// "install again" hint.
func TestInstallAndImportRefuseReadOnlyFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path, before, cfg := fixtureHome(t, home)
	os.Chmod(path, 0o444)
	_, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--force")
	if err == nil || !strings.Contains(errOut, path+" is read-only (mode 0444); make it writable (chmod u+w) to let dynamic-mcp change it") ||
		strings.Contains(errOut, "install again") {
		t.Errorf("install into a read-only config: %v\n%s", err, errOut)
	}
	if now, _ := os.ReadFile(path); string(now) != string(before) {
		t.Errorf("config changed:\n%s", now)
	}
	if records, _ := os.ReadDir(filepath.Join(home, ".dynamic-mcp", "installs")); len(records) != 0 {
		t.Errorf("%d install records left", len(records))
	}
	os.Chmod(cfg, 0o444)
	_, errOut, err = runBinary(t, home, "import", path, "-o", cfg)
	if err == nil || !strings.Contains(errOut, cfg+" is read-only (mode 0444)") {
		t.Errorf("import into a read-only config: %v\n%s", err, errOut)
	}
	if backups, _ := os.ReadDir(filepath.Join(home, ".dynamic-mcp", "backups")); len(backups) != 0 {
		t.Errorf("%d backups left", len(backups))
	}
}

// install refuses to take servers from a client that the config has no
// group for, naming each and the import to run first; --dry-run warns and
// shows the diff; --force installs; after the import, install needs no
// --force (a group renamed by the user is found by its command).
func TestInstallWarnsOfServersItWouldLose(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path, before, cfg := fixtureHome(t, home)
	_, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg)
	for _, want := range []string{
		"warning: Cursor's server everything has no group in " + cfg + ": install removes it from " + path + "; run dynamic-mcp import cursor -o " + cfg + " first",
		"warning: Cursor's server remote has no group in ",
		"Cursor would lose 2 servers the config does not serve, so nothing was changed",
		"install --force (the file as it is is copied into " + filepath.Join(home, ".dynamic-mcp", "backups"),
	} {
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("install losing servers: %v; want %q in\n%s", err, want, errOut)
		}
	}
	if now, _ := os.ReadFile(path); string(now) != string(before) {
		t.Fatalf("config changed:\n%s", now)
	}
	out, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--dry-run")
	if err != nil || !strings.Contains(errOut, "server everything has no group") || !strings.Contains(out, "-    \"everything\"") {
		t.Errorf("dry run: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := runBinary(t, home, "import", "cursor", "-o", cfg); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "  everything:", "  renamed:", 1)), 0o600)
	if _, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg); err != nil || strings.Contains(errOut, "has no group") {
		t.Errorf("install after import: %v\n%s", err, errOut)
	}
}

// install run before import says to import first, with the command.
func TestInstallBeforeImportSaysImportFirst(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	_, errOut, err := runBinary(t, home, "install", "claude-desktop", "--dry-run")
	want := "no config at " + filepath.Join(home, ".dynamic-mcp", "config.yaml") + ", so nothing was installed: import the client's servers into it first (dynamic-mcp import claude-desktop)"
	if err == nil || !strings.Contains(errOut, want) {
		t.Errorf("install before import: %v\n%s\nwant %s", err, errOut, want)
	}
	other := filepath.Join(home, "other.yaml")
	if _, errOut, err = runBinary(t, home, "install", "cursor", "-c", other); err == nil || !strings.Contains(errOut, "(dynamic-mcp import cursor -o "+other+")") {
		t.Errorf("install -c of a config not there: %v\n%s", err, errOut)
	}
}

// install -c of a path that mistypes a config beside it (config.yml)
// says there is no config there, naming the one it likely meant, and to
// import first; not that the config is not valid.
func TestInstallMistypedConfigSaysNoConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	there := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(there, []byte("groups:\n  a: {description: x, command: a}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(home, "config.yml")
	_, errOut, err := runBinary(t, home, "install", "codex", "-c", typo, "--dry-run")
	want := "no config at " + typo + ", so nothing was installed: did you mean " + there + "? If not, import the client's servers into it first (dynamic-mcp import codex -o " + typo + "), or name another config with -c FILE"
	if err == nil || !strings.Contains(errOut, want) || strings.Contains(errOut, "not valid") {
		t.Errorf("install -c %s: %v\n%s\nwant %s", typo, err, errOut, want)
	}
}

// install codex says it sets Codex's startup grace, a Codex-wide key,
// when it writes it, and says nothing of it when the file sets the key,
// its own or an earlier install's line.
func TestInstallCodexSaysItSetsTheStartupGrace(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path, before, cfg := clientHome(t, home, "codex")
	out, errOut, err := runBinary(t, home, "install", "codex", "-c", cfg, "--force")
	want := "  and sets mcp_optional_startup_grace_ms = 0 for all of Codex: its first turn waits for its MCP servers to start, each up to its startup_timeout_sec, not 1 s (see docs/troubleshooting.md)\n"
	if err != nil || !strings.Contains(out, want) {
		t.Errorf("install: %v; want %q in\n%s%s", err, want, out, errOut)
	}
	// Installed again, the line is the earlier install's: not said again.
	out, errOut, err = runBinary(t, home, "install", "codex", "-c", cfg, "--force")
	if err != nil || strings.Contains(out, "startup_grace") {
		t.Errorf("install again: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := runBinary(t, home, "uninstall", "codex"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, errOut)
	}
	if err := os.WriteFile(path, append([]byte("mcp_optional_startup_grace_ms = 5000\n"), before...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = runBinary(t, home, "install", "codex", "-c", cfg, "--force")
	if err != nil || strings.Contains(out, "startup_grace") {
		t.Errorf("install over the user's own grace: %v\n%s%s", err, out, errOut)
	}
}

// A Codex config.toml with CRLF line endings and a byte order mark (as
// Windows editors save it) installs, installs again and uninstalls, in
// its own line endings, and comes back byte for byte.
func TestInstallCodexCRLF(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path, lf, cfg := clientHome(t, home, "codex")
	before := append([]byte("\xef\xbb\xbf"), bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n"))...)
	if err := os.WriteFile(path, before, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"install", "install again"} {
		out, errOut, err := runBinary(t, home, "install", "codex", "-c", cfg, "--force")
		now, _ := os.ReadFile(path)
		if err != nil || strings.Contains(out, "sets mcp_optional_startup_grace_ms = 0") != (run == "install") ||
			bytes.Count(now, []byte("\n")) != bytes.Count(now, []byte("\r\n")) || !bytes.HasPrefix(now, []byte("\xef\xbb\xbf"+clients.CodexStartupGrace)) {
			t.Fatalf("%s: %v\n%s%s\nwrote %q", run, err, out, errOut, now)
		}
	}
	if _, errOut, err := runBinary(t, home, "uninstall", "codex"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, errOut)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, before) {
		t.Errorf("uninstall wrote %q\nwant %q", now, before)
	}
}

// An install or uninstall waiting for another of the same client config
// stops waiting when it is interrupted (its context ends: a first
// Ctrl-C), rather than sit out the whole wait, having written nothing; a
// client config reached through a link is the same file, with the same
// lock, as its target.
func TestInstallWaitEndsWithItsContext(t *testing.T) {
	for _, linked := range []bool{false, true} {
		for _, cmd := range []string{"install", "uninstall"} {
			t.Run(fmt.Sprintf("%s linked=%v", cmd, linked), func(t *testing.T) {
				path, before, cfg := installedHome(t)
				lockAt := path
				if linked { // the user's config kept elsewhere (a dotfiles repo)
					lockAt = filepath.Join(t.TempDir(), "mcp.json")
					if err := os.Rename(path, lockAt); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(lockAt, path); err != nil {
						t.Fatal(err)
					}
				}
				other, err := lockOf(t.Context(), "install", samePath(lockAt), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Unlock()
				ctx, cancel := context.WithCancel(t.Context())
				cancel() // interrupted while it waits
				args := []string{cmd, "cursor"}
				if cmd == "install" {
					args = append(args, "-c", cfg, "--force")
				}
				var stdout, stderr bytes.Buffer
				// The old code waited it out (or, through a link, took
				// another lock and wrote): the test then fails by its error.
				err = run(ctx, args, strings.NewReader(""), &stdout, &stderr)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s interrupted while another held the config: %v\n%s%s", cmd, err, stdout.String(), stderr.String())
				}
				if now, _ := os.ReadFile(lockAt); !bytes.Equal(now, before) {
					t.Errorf("the client config was written meanwhile:\n%s", now)
				}
			})
		}
	}
}

// A client that is a file's path is import's alone: install's refusal of
// one does not offer what it refuses, and import's names the file it
// did not find.
func TestClientOrPathRefusals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "other.json")
	if _, errOut, err := runCLI(t, "install", file, "--dry-run"); err == nil || !strings.Contains(errOut, "unknown client") || strings.Contains(errOut, "file path") {
		t.Errorf("install of a path: %v\n%s", err, errOut)
	}
	if _, errOut, err := runCLI(t, "import", file); err == nil || !strings.Contains(errOut, "or a config file's path (no file is at "+file+")") {
		t.Errorf("import of a path with no file: %v\n%s", err, errOut)
	}
}

// install warns, as validate does, of a group whose description is still
// the one import left: the client's model would read it from now on.
func TestInstallWarnsOfPlaceholderDescriptions(t *testing.T) {
	_, _, cfg := installedHome(t)
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: \"TODO: describe what f is for (imported from mcp.json)\", command: %q }\n", fakeBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--dry-run")
	if err != nil || !strings.Contains(errOut, "warning: "+cfg+": group f has the description import left for it; say what it is for, the LLM reads it") {
		t.Errorf("install of a config with a placeholder: %v\n%s", err, errOut)
	}
}
