package auth

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// Every user's own sign-ins are listed, with the user's key, on file and
// in the shared store; a subject names its user's records; one user's
// record removed leaves the others' and the shared one.
func TestListAndRemoveUsersSignIns(t *testing.T) {
	url := pgtest.Start(t)
	for name, store := range map[string]*Store{
		"file":  NewStore(filepath.Join(t.TempDir(), "oauth-servers")),
		"store": replica(t, url),
	} {
		t.Run(name, func(t *testing.T) {
			const u = "https://mcp.example/"
			if err := store.Save(&Record{Server: "web", URL: u, AccessToken: "shared-token"}); err != nil {
				t.Fatal(err)
			}
			for _, user := range []string{"jwt:alice", "token:ci"} {
				for _, server := range []string{"web", "docs"} {
					if err := store.ForUser(user).Save(&Record{Server: server, URL: u, AccessToken: user + "-" + server}); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A record saved before records named their user: known by its hash.
			if err := store.ForUserHash(UserHash("jwt:old")).Save(&Record{Server: "web", URL: u, AccessToken: "old"}); err != nil {
				t.Fatal(err)
			}
			recs, err := store.ListUsers()
			if err != nil || len(recs) != 5 {
				t.Fatalf("ListUsers = %v, %v", recs, err)
			}
			want := []string{"docs jwt:alice", "docs token:ci", "web ", "web jwt:alice", "web token:ci"}
			for i, r := range recs {
				if got := r.Server + " " + r.User; got != want[i] {
					t.Errorf("record %d is %q, want %q", i, got, want[i])
				}
				if r.User != "" && r.AccessToken != r.User+"-"+r.Server {
					t.Errorf("record %d holds %q", i, r.AccessToken)
				}
			}
			if !recs[2].MatchUser("old") || recs[2].MatchUser("alice") || !recs[0].MatchUser("alice") || !recs[0].MatchUser("jwt:alice") || recs[1].MatchUser("alice") {
				t.Error("MatchUser matches the wrong records")
			}
			if err := store.ForUserHash(recs[3].Hash).Delete("web"); err != nil {
				t.Fatal(err)
			}
			if _, err := store.ForUser("jwt:alice").Load("web", u); !errors.Is(err, ErrNoToken) {
				t.Errorf("alice's web sign-in after its removal: %v", err)
			}
			if r, err := store.ForUser("jwt:alice").Load("docs", u); err != nil || r.AccessToken != "jwt:alice-docs" {
				t.Errorf("alice's other sign-in: %v, %v", r, err)
			}
			if r, err := store.Load("web", u); err != nil || r.AccessToken != "shared-token" {
				t.Errorf("the shared sign-in: %v, %v", r, err)
			}
			if recs, _ := store.ListUsers(); len(recs) != 4 {
				t.Errorf("%d records after a removal, want 4", len(recs))
			}
		})
	}
}
