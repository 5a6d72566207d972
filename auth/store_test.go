package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token directory that is a symbolic link is never chmodded through: a
// target open to others is refused with what to do, and left as it was.
func TestStoreDoesNotChmodThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "synced")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "oauth-servers")
	if err := os.Symlink(shared, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	s := NewStore(link)
	err := s.Save(&Record{Server: "web", URL: "https://mcp.example/", AccessToken: "secret"})
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("Save into a linked 0755 directory: %v; want a refusal saying chmod 700", err)
	}
	if fi, _ := os.Stat(shared); fi.Mode().Perm() != 0o755 {
		t.Fatalf("the link's target was chmodded to %v", fi.Mode().Perm())
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	// Once the user closes the target, Save writes through the link.
	if err := os.Chmod(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(&Record{Server: "web", URL: "https://mcp.example/", AccessToken: "secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared, "web.json")); err != nil {
		t.Fatal(err)
	}
	// A directory of its own is still made private.
	own := filepath.Join(dir, "own")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := NewStore(own).Save(&Record{Server: "web", URL: "https://mcp.example/"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o700 {
		t.Errorf("own directory mode %v, want 0700", fi.Mode().Perm())
	}
}
