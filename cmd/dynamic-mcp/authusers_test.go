package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// auth status lists the users' own sign-ins (auth: per-user) beside the
// shared one, and --user one user's; auth logout --user removes one
// user's sign-in to a server, or to every server, and nobody else's: in
// the state directory and in the store alike.
func TestAuthStatusAndLogoutOfUsers(t *testing.T) {
	url := pgtest.Start(t)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, vault.KeySize)))
	for _, mode := range []string{"file", "store"} {
		t.Run(mode, func(t *testing.T) {
			state := t.TempDir()
			cfg := filepath.Join(t.TempDir(), "c.yaml")
			src := fmt.Sprintf("state_dir: %s\ngroups:\n  web: {description: x, url: \"https://web.example/mcp\", auth: per-user}\n  docs: {description: x, url: \"https://docs.example/mcp\", auth: per-user}\n", state)
			store := auth.NewStore(filepath.Join(state, "oauth-servers"))
			if mode == "store" {
				src = "store: " + url + "\n" + src
				db, err := pgstore.Open(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				store = auth.NewSharedStore(filepath.Join(state, "oauth-servers"), db)
			}
			os.WriteFile(cfg, []byte(src), 0o600)
			if err := store.Save(&auth.Record{Server: "web", URL: "https://web.example/mcp", AccessToken: "hub", Issuer: "https://as.example"}); err != nil {
				t.Fatal(err)
			}
			for _, user := range []string{"jwt:alice-" + mode, "token:ci-" + mode} {
				for _, server := range []string{"web", "docs"} {
					if err := store.ForUser(user).Save(&auth.Record{Server: server, URL: "https://" + server + ".example/mcp", AccessToken: user, Issuer: "https://as.example"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			run1 := func(args ...string) (string, error) {
				var out bytes.Buffer
				err := run(context.Background(), append(args, "-c", cfg), strings.NewReader(""), &out, &out)
				return out.String(), err
			}
			out, err := run1("auth", "status")
			if err != nil || !strings.Contains(out, "SERVER  USER") || strings.Count(out, "jwt:alice-"+mode) != 2 || strings.Count(out, "token:ci-"+mode) != 2 || !strings.Contains(out, "CAN REFRESH") {
				t.Fatalf("auth status: %v\n%s", err, out)
			}
			out, err = run1("auth", "status", "--user", "alice-"+mode)
			if err != nil || strings.Count(out, "jwt:alice-"+mode) != 2 || strings.Contains(out, "ci-"+mode) {
				t.Fatalf("auth status --user: %v\n%s", err, out)
			}
			if out, err := run1("auth", "logout", "web", "--user", "alice-"+mode); err != nil || !strings.Contains(out, "web: jwt:alice-"+mode+" signed out") {
				t.Fatalf("auth logout web --user: %v\n%s", err, out)
			}
			if out, err := run1("auth", "logout", "--user", "token:ci-"+mode); err != nil || strings.Count(out, "signed out") != 2 {
				t.Fatalf("auth logout --user: %v\n%s", err, out)
			}
			out, err = run1("auth", "status")
			if err != nil || !strings.Contains(out, "docs    jwt:alice-"+mode) || strings.Contains(out, "web     jwt:alice") || strings.Contains(out, "ci-"+mode) {
				t.Fatalf("auth status after logouts: %v\n%s", err, out)
			}
			if r, err := store.Load("web", "https://web.example/mcp"); err != nil || r.AccessToken != "hub" {
				t.Errorf("the shared sign-in after the users' logouts: %v, %v", r, err)
			}
			if _, err := run1("auth", "logout", "--user", "nobody"); err == nil {
				t.Error("logout of a user with no sign-in succeeded")
			}
		})
	}
}
