package auth

import (
	"bytes"
	"encoding/json"
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
	if _, err := os.Stat(filepath.Join(shared, "web.sealed")); err != nil {
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

// A record is sealed at rest: its file holds no token; a plaintext record
// of an older version is sealed on first use and the plaintext removed.
func TestStoreSealsAndMigrates(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "oauth-servers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := &Record{Server: "old", URL: "https://old.example/", AccessToken: "plain-access-1", RefreshToken: "plain-refresh-1"}
	b, _ := json.Marshal(old)
	if err := os.WriteFile(filepath.Join(dir, "old.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewStore(dir)
	if err := s.Save(&Record{Server: "new", URL: "https://new.example/", AccessToken: "sealed-access-2", ClientSecret: "sealed-secret-2"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v; want the plaintext and the sealed record", list, err)
	}
	got, err := s.Load("old", "https://old.example/")
	if err != nil || got.AccessToken != "plain-access-1" {
		t.Fatalf("Load of a plaintext record: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "old.json")); !os.IsNotExist(err) {
		t.Fatalf("the plaintext record is still there: %v", err)
	}
	// No file under the state directory holds a token.
	err = filepath.Walk(state, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, v := range []string{"plain-access-1", "plain-refresh-1", "sealed-access-2", "sealed-secret-2"} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds %s in plaintext", p, v)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another store (a restarted hub) reads both back.
	s2 := NewStore(dir)
	for _, r := range []*Record{old, {Server: "new", URL: "https://new.example/", AccessToken: "sealed-access-2"}} {
		got, err := s2.Load(r.Server, r.URL)
		if err != nil || got.AccessToken != r.AccessToken {
			t.Errorf("reload %s: %+v, %v", r.Server, got, err)
		}
	}
}
