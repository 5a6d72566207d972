package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// keepBackups is how many backups of one file are kept; older ones are
// removed when a new one is made (those install records name are always
// kept: uninstall puts a file back from them).
const keepBackups = 5

// backupDir is where the backups of the files install, uninstall and
// import change are kept: in the state dir, not beside the file, where a
// project's config (maybe with literal secrets in it) would leave copies
// inside a repository.
func backupDir() string { return filepath.Join(config.Home(), "backups") }

// backupPrefix names the backups of path: the path made a file name
// (home_me_proj_.mcp.json), so that a person listing the directory sees
// whose copy each is, and a short hash of the path itself, so that two
// paths that make the same name never share (or prune) backups.
func backupPrefix(path string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, strings.TrimLeft(filepath.ToSlash(path), "/"))
	if len(name) > 120 {
		name = name[len(name)-120:]
	}
	sum := sha256.Sum256([]byte(path))
	return name + "-" + hex.EncodeToString(sum[:4]) + "."
}

// backupFile copies old, the contents of path, into the backup directory
// (0600, in a 0700 directory), prunes the older backups of path, and
// returns the copy's path ("" when path does not exist).
func backupFile(path string, old []byte) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", nil
	}
	dir := backupDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	backup := filepath.Join(dir, backupPrefix(path)+time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := atomicfile.Write(backup, old, 0o600); err != nil {
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	pruneBackups(path)
	return backup, nil
}

// pruneBackups removes all but the newest keepBackups backups of path,
// never one an install record names. Best effort: a backup left
// behind is only a file too many.
func pruneBackups(path string) {
	entries, err := os.ReadDir(backupDir())
	if err != nil {
		return
	}
	prefix := backupPrefix(path)
	var mine []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && !e.IsDir() {
			mine = append(mine, e.Name())
		}
	}
	slices.Sort(mine) // the times sort as text
	old := mine[:max(0, len(mine)-keepBackups)]
	if len(old) == 0 {
		return
	}
	keep := recordedBackups()
	for _, name := range old {
		if full := filepath.Join(backupDir(), name); !keep[full] {
			os.Remove(full)
		}
	}
}

// recordedBackups are the backups install records name: uninstall puts a
// file back from them.
func recordedBackups() map[string]bool {
	keep := map[string]bool{}
	paths, _ := filepath.Glob(filepath.Join(config.Home(), "installs", "*.json"))
	for _, p := range paths {
		var rec installRecord
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &rec) == nil {
			keep[rec.Backup] = true
			if rec.Settings != nil {
				keep[rec.Settings.Backup] = true
			}
		}
	}
	return keep
}
