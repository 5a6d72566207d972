package main

import (
	"crypto/sha256"
	"encoding/hex"
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
// removed when a new one is made (the one an install record names is
// always kept: uninstall puts the file back from it).
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
// never the one its install record names. Best effort: a backup left
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
	var keep string
	if rec, err := readRecord(path); err == nil && rec != nil {
		keep = rec.Backup
	}
	for _, name := range mine[:max(0, len(mine)-keepBackups)] {
		if full := filepath.Join(backupDir(), name); full != keep {
			os.Remove(full)
		}
	}
}
