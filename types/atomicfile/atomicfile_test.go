package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// A read-only file (chmod 444) is refused and left as it was, by what to
// do, though the rename would replace it (even for root).
func TestWriteRefusesReadOnlyFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("old"), 0o444); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{real, link} {
		err := Write(p, []byte("new"), 0o644)
		want := p + " is read-only (mode 0444); make it writable (chmod u+w) to let dynamic-mcp change it"
		if err == nil || err.Error() != want || !errors.Is(err, ErrNotWritable) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("Write(%s): %v; want %q", p, err, want)
		}
	}
	if b, _ := os.ReadFile(real); string(b) != "old" {
		t.Errorf("contents %q, want old", b)
	}
}

// A directory the temporary file cannot be made in is named, not the
// temporary file's path. (Root writes into a read-only directory, so the
// message is checked on the error the kernel gives anyone else.)
func TestWriteNamesUnwritableDirectory(t *testing.T) {
	err := dirError("/home/me/.cursor/mcp.json", "/nix/store/abc-hm", &fs.PathError{Op: "open", Path: "/nix/store/abc-hm/.mcp.json.tmp-1", Err: syscall.EROFS})
	want := "cannot write /home/me/.cursor/mcp.json: its directory /nix/store/abc-hm is not writable (a generated dotfile?): edit the file where it is generated"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotWritable) {
		t.Errorf("dirError: %v; want %q", err, want)
	}
	if os.Geteuid() == 0 {
		return
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := Write(filepath.Join(dir, "f"), []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), "its directory "+dir+" is not writable") {
		t.Errorf("Write into a read-only directory: %v", err)
	}
	if err := Writable(filepath.Join(dir, "f")); err == nil || !strings.Contains(err.Error(), "its directory "+dir+" is not writable") {
		t.Errorf("Writable in a read-only directory: %v", err)
	}
}
