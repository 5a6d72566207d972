package auth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A user's sign-in is kept apart: neither the shared record nor another
// user's store reads it, and a user's file copied over another user's
// does not open for that other user.
func TestStoreForUserKeepsUsersApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth-servers")
	shared := NewStore(dir)
	const u = "https://mcp.example/"
	alice, bob := shared.ForUser("token:alice"), shared.ForUser("token:bob")
	if err := alice.Save(&Record{Server: "web", URL: u, AccessToken: "alice-token"}); err != nil {
		t.Fatal(err)
	}
	if r, err := alice.Load("web", u); err != nil || r.AccessToken != "alice-token" {
		t.Fatalf("alice's own record: %v, %v", r, err)
	}
	for name, s := range map[string]*Store{"shared": shared, "bob": bob} {
		if r, err := s.Load("web", u); !errors.Is(err, ErrNoToken) {
			t.Errorf("%s reads alice's sign-in: %v, %v", name, r, err)
		}
	}
	if recs, err := shared.List(); err != nil || len(recs) != 0 {
		t.Errorf("the shared list shows per-user records: %v, %v", recs, err)
	}
	b, err := os.ReadFile(alice.path("web"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bob.path("web"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := bob.Load("web", u); err == nil {
		t.Errorf("alice's file copied to bob's opened for bob: %v", r)
	}
}
