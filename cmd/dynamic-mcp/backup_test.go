package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// backupsOf lists the backups of path in the state dir, oldest first.
func backupsOf(path string) []string {
	backups, _ := filepath.Glob(filepath.Join(backupDir(), backupPrefix(path)+"*"))
	return backups
}

// Install, uninstall and import keep their backups in the state dir
// (0600 in a 0700 directory), never beside the file they change, and the
// last keepBackups of each file: seven installs over an install and seven
// uninstalls leave five, yet the backup the install record names (the
// file before the first install) is kept, and uninstall still puts the
// file back byte for byte.
func TestBackupsStayInTheStateDirAndArePruned(t *testing.T) {
	path, before, cfg := installedHome(t)
	for range 2 {
		for i := range 7 {
			out, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force")
			if err != nil {
				t.Fatalf("install %d: %v\n%s", i, err, errOut)
			}
			if !strings.Contains(out, "the file as it was: "+backupDir()) {
				t.Errorf("install does not say where the backup is:\n%s", out)
			}
		}
		if got := backupsOf(path); len(got) > keepBackups+1 {
			t.Errorf("%d backups kept: %v", len(got), got)
		}
		out, errOut, err := runCLI(t, "uninstall", "cursor")
		if err != nil {
			t.Fatalf("uninstall: %v\n%s", err, errOut)
		}
		if now, _ := os.ReadFile(path); string(now) != string(before) {
			t.Fatalf("after installs and uninstall the file differs:\n%s\nwant:\n%s", now, before)
		}
		if !strings.Contains(out, backupDir()) {
			t.Errorf("uninstall does not say where the backup is:\n%s", out)
		}
	}
	if got := backupsOf(path); len(got) != keepBackups {
		t.Errorf("want %d backups of %s, got %v", keepBackups, path, got)
	}
	if beside, _ := filepath.Glob(path + "*backup*"); len(beside) != 0 {
		t.Errorf("backups beside the file: %v", beside)
	}
	if dir, err := os.Stat(backupDir()); err != nil || dir.Mode().Perm() != 0o700 {
		t.Errorf("backup dir %s: not 0700 (%v)", backupDir(), err)
	}
	for _, b := range backupsOf(path) {
		if fi, err := os.Stat(b); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("backup %s: not 0600 (%v)", b, err)
		}
		if !strings.Contains(filepath.Base(b), "cursor_mcp.json-") {
			t.Errorf("backup %s does not name the file it copies", b)
		}
	}

	// import backs up the config it merges into in the same place.
	src := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers": {"more": {"command": "srv"}}}`), 0o600)
	out, errOut, err := runCLI(t, "import", src, "-o", cfg)
	if err != nil || len(backupsOf(cfg)) != 1 || !strings.Contains(out, backupsOf(cfg)[0]) {
		t.Errorf("import: %v backups %v\n%s%s", err, backupsOf(cfg), out, errOut)
	}
}
