package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("contents %q, %v; want new", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left %d files in the directory, want only f.json", len(entries))
	}
}

func TestWriteFailureLeavesFile(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

// A dotfiles-managed config is a symlink: Write replaces the file it points
// to and leaves the link a link.
func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	dotfiles := filepath.Join(dir, "dotfiles")
	if err := os.Mkdir(dotfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dotfiles, "mcp.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink("dotfiles/mcp.json", link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	// A link to a link is followed to the end.
	link2 := filepath.Join(dir, "again.json")
	if err := os.Symlink(link, link2); err != nil {
		t.Fatal(err)
	}
	if err := Write(link2, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, link2} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink: %v %v", l, fi.Mode(), err)
		}
	}
	if b, err := os.ReadFile(real); err != nil || string(b) != "new" {
		t.Errorf("target holds %q, %v; want new", b, err)
	}
	if entries, _ := os.ReadDir(dotfiles); len(entries) != 1 {
		t.Errorf("left %d files beside the target, want 1", len(entries))
	}
	// A dangling link is written through, creating its target.
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dotfiles, "later.json"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := Write(dangling, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dotfiles, "later.json")); err != nil || string(b) != "x" {
		t.Errorf("dangling target holds %q, %v", b, err)
	}
	// A loop is an error, not a hang.
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if err := Write(loop, []byte("x"), 0o600); err == nil {
		t.Error("Write through a symlink loop succeeded")
	}
}
