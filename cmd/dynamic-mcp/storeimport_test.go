package main

import (
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// A state directory made on one machine by the real commands (`secret
// set`, `auth login` against an OAuth server, `tools`, which pins the
// tools, and a user's own sign-in as the hub saves it), sealed under its
// own key file, is imported into a store: a dry run writes nothing; the
// import copies everything and leaves the files; a second is all
// unchanged; a sign-in renewed in the store since is kept unless --force.
// Then a replica with the store and an empty state directory calls
// through to the upstream, which needs both the imported sign-in and the
// imported ${secret:} value, and renews the sign-in with the imported
// client registration.
func TestStoreImportThenServeFromTheStore(t *testing.T) {
	t.Parallel() // the key and the database reach its processes in their environment
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	url := pgtest.Start(t)
	a := authtest.NewServer(t)
	mcpHandler := helloMCP("hello, keyed and signed-in hub")
	const apiKey = "sk-upstream-key-31337"
	a.Resource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != apiKey {
			http.Error(w, "wrong api key", http.StatusForbidden)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	groups := "mode: flat\ngroups:\n  r:\n    description: a protected server\n    url: " + a.URL + "/mcp\n    transport: streamable-http\n" +
		"    headers: { X-Api-Key: \"${secret:UP_KEY}\" }\n    retry: { initial_interval: 100ms, reconnect_interval: 200ms }\n"

	// One machine's state directory, its key in a key file (no keychain).
	oldHome := t.TempDir()
	oldCfg := filepath.Join(oldHome, "old.yaml")
	os.WriteFile(oldCfg, []byte(groups), 0o600)
	oldEnv := append(os.Environ(), "DYNAMIC_MCP_HOME="+oldHome, vault.EnvKey+"=",
		"DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(oldHome, "no-bus"))
	oldRun := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(hubBin, args...)
		cmd.Env, cmd.Stdin = oldEnv, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	oldRun(apiKey+"\n", "secret", "set", "UP_KEY", "-c", oldCfg)
	if _, err := authLoginR(t, oldEnv, oldCfg); err != nil {
		t.Fatalf("auth login: %v", err)
	}
	if out := oldRun("", "tools", "-c", oldCfg); !strings.Contains(out, "hello") {
		t.Fatalf("tools: %s", out)
	}
	if _, err := os.Stat(filepath.Join(oldHome, vault.KeyFile)); err != nil {
		t.Fatalf("the old state directory has no key file: %v", err)
	}
	own, err := vault.Find(t.Context(), vault.Options{Dir: oldHome})
	if err != nil {
		t.Fatal(err)
	}
	oldTokens := auth.NewStore(filepath.Join(oldHome, "oauth-servers"))
	oldTokens.UseVault(own)
	signIn, err := oldTokens.Load("r", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	alice := *signIn
	alice.AccessToken, alice.RefreshToken = "alice-access", "alice-refresh"
	if err := oldTokens.ForUser("jwt:alice").Save(&alice); err != nil {
		t.Fatal(err)
	}
	oldFiles := listFiles(t, oldHome)

	// The team's config: the same groups on a store, its key shared.
	teamKey := []byte("team-vault-key-0123456789abcdef!")
	key := base64.StdEncoding.EncodeToString(teamKey)
	teamCfg := filepath.Join(t.TempDir(), "team.yaml")
	os.WriteFile(teamCfg, []byte("store: ${TEAM_DB}\n"+groups), 0o600)
	teamEnv := append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir(), "TEAM_DB="+url, vault.EnvKey+"="+key)
	importRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(hubBin, append([]string{"store", "import", "-c", teamCfg, "--from", oldHome}, args...)...)
		cmd.Env = teamEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("store import %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	out := importRun("--dry-run")
	if !strings.Contains(out, "dry run") || !strings.Contains(out, "sign-in r: copied") {
		t.Fatalf("dry run:\n%s", out)
	}
	if keys, _ := db.Keys(t.Context(), "token"); len(keys) != 0 {
		t.Fatalf("the dry run wrote sign-ins: %v", keys)
	}
	out = importRun()
	t.Logf("store import:\n%s", out)
	for _, want := range []string{"sign-in r: copied", "sign-in r of jwt:alice: copied", "secret UP_KEY: copied", "tool pins of r: copied", "4 copied", "nothing is deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("import does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, apiKey) || strings.Contains(out, signIn.AccessToken) {
		t.Errorf("import printed a secret:\n%s", out)
	}
	if got := listFiles(t, oldHome); strings.Join(got, "\n") != strings.Join(oldFiles, "\n") {
		t.Errorf("the state directory changed:\nbefore %v\nafter  %v", oldFiles, got)
	}
	if out := importRun(); !strings.Contains(out, "0 copied, 0 updated, 4 unchanged") {
		t.Errorf("a second import:\n%s", out)
	}

	// A replica renewed the sign-in since: its record is kept.
	shared := auth.NewSharedStore(filepath.Join(t.TempDir(), "oauth-servers"), db)
	teamVault, err := vault.New(teamKey, "env") // as every replica has it, from vault.EnvKey
	if err != nil {
		t.Fatal(err)
	}
	shared.UseVault(teamVault)
	newer := *signIn
	newer.AccessToken, newer.Issued = "renewed-elsewhere", time.Now().Add(time.Hour)
	if err := shared.Save(&newer); err != nil {
		t.Fatal(err)
	}
	if out := importRun(); !strings.Contains(out, "sign-in r: skipped: the store's is newer") || !strings.Contains(out, "--force replaces it") {
		t.Errorf("import over a newer sign-in:\n%s", out)
	}
	if r, err := shared.Load("r", a.URL+"/mcp"); err != nil || r.AccessToken != "renewed-elsewhere" {
		t.Fatalf("the newer sign-in was overwritten: %v, %v", r, err)
	}
	if out := importRun("--force"); !strings.Contains(out, "sign-in r: replaced") {
		t.Errorf("import --force:\n%s", out)
	}

	// A replica that never signed in, with an empty state directory.
	c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + t.TempDir(), "TEAM_DB=" + url, vault.EnvKey + "=" + key}, hubBin, "serve", "--standalone", "-c", teamCfg)
	c.initialize("2025-06-18")
	await.Costly(t, 10*time.Second, "the protected tool", func() bool { return strings.Contains(string(c.call("tools/list", nil)), "r__hello") })
	if text, isErr := c.callText("r__hello", nil); isErr || text != "hello, keyed and signed-in hub" {
		t.Fatalf("call through the imported sign-in and secret: %q", text)
	}
	a.Revoke() // the access token is refused: the replica renews it
	if text, isErr := c.callText("r__hello", nil); isErr || text != "hello, keyed and signed-in hub" {
		t.Fatalf("call after a renewal: %q", text)
	}
	a.Lock()
	last, registered := a.TokenForms[len(a.TokenForms)-1], a.Registered
	a.Unlock()
	if last.Get("grant_type") != "refresh_token" || last.Get("client_id") != signIn.ClientID || registered != 1 {
		t.Errorf("the renewal was %v after %d registrations, want a refresh with the imported client %s, registered once (by auth login)", last, registered, signIn.ClientID)
	}
	status := exec.Command(hubBin, "auth", "status", "--user", "alice", "-c", teamCfg)
	status.Env = teamEnv
	if out, err := status.CombinedOutput(); err != nil || !strings.Contains(string(out), "jwt:alice") {
		t.Errorf("auth status --user alice on the store: %v\n%s", err, out)
	}
}

// listFiles lists the files under dir with their sizes and times.
func listFiles(t *testing.T, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, p+" "+fi.ModTime().String()+" "+fi.Mode().String())
		}
		return nil
	})
	return out
}
