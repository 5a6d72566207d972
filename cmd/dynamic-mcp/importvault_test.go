package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// importVaultSetup gives an in-process import a vault key and a state
// directory (DYNAMIC_MCP_HOME); it returns the directory's secrets.
func importVaultSetup(t *testing.T) (home string, secrets *vault.Secrets) {
	t.Helper()
	key := bytes.Repeat([]byte{9}, vault.KeySize)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	home = t.TempDir()
	t.Setenv("DYNAMIC_MCP_HOME", home)
	v, err := vault.New(key, "test")
	if err != nil {
		t.Fatal(err)
	}
	return home, vault.NewSecrets(home, v)
}

// importVault runs import --vault of the client file holding servers
// (its mcpServers JSON) into out.
func importVault(t *testing.T, servers, out string, more ...string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(src, []byte(`{"mcpServers":`+servers+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"import", src, "-o", out, "--vault"}, more...), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("import --vault: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// wantSecrets fails t unless the vault holds exactly want.
func wantSecrets(t *testing.T, secrets *vault.Secrets, want map[string]string) {
	t.Helper()
	got, err := secrets.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("the vault holds %d secrets, want %d: %v", len(got), len(want), got)
	}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("the vault's %s is %q, want %q", n, got[n], v)
		}
	}
}

// Two secrets of one import that make the same vault name (slack's
// SLACK_BOT_TOKEN, slack-bot's TOKEN) are both kept, the second under a
// numbered name that its group then uses, and import says so.
func TestImportVaultNamesCollide(t *testing.T) {
	home, secrets := importVaultSetup(t)
	out := filepath.Join(home, "config.yaml")
	stdout := importVault(t, `{
		"slack": {"command": "node", "args": ["a.js"], "env": {"SLACK_BOT_TOKEN": "xoxb-first-111"}},
		"slack-bot": {"command": "node", "args": ["b.js"], "env": {"TOKEN": "xoxb-second-222"}}}`, out)
	wantSecrets(t, secrets, map[string]string{"SLACK_BOT_TOKEN": "xoxb-first-111", "SLACK_BOT_TOKEN_2": "xoxb-second-222"})
	if !strings.Contains(stdout, "moved env TOKEN of slack-bot into the vault as ${secret:SLACK_BOT_TOKEN_2} (not SLACK_BOT_TOKEN: the vault's SLACK_BOT_TOKEN is another secret)") {
		t.Errorf("import's output does not name the second secret's name:\n%s", stdout)
	}
	cfg, err := configs.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cfg.Groups {
		env := g.Servers[0].Env
		if g.Name == "slack" && env["SLACK_BOT_TOKEN"] != "xoxb-first-111" || g.Name == "slack-bot" && env["TOKEN"] != "xoxb-second-222" {
			t.Errorf("group %s has env %v", g.Name, env)
		}
	}
}

// A secret set by hand before the import keeps its value when the
// import's secret makes its name: the import's goes under the next free
// name. One that holds the very value the import found is used as it is.
func TestImportVaultKeepsSecretSetByHand(t *testing.T) {
	home, secrets := importVaultSetup(t)
	if err := secrets.Set("GITHUB_TOKEN", "ghp_setByHand0000"); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Set("MIRROR_GITHUB_TOKEN", "ghp_imported11111"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(home, "config.yaml")
	stdout := importVault(t, `{
		"github": {"command": "node", "args": ["a.js"], "env": {"GITHUB_TOKEN": "ghp_imported11111"}},
		"mirror": {"command": "node", "args": ["b.js"], "env": {"GITHUB_TOKEN": "ghp_imported11111"}}}`, out)
	wantSecrets(t, secrets, map[string]string{"GITHUB_TOKEN": "ghp_setByHand0000", "GITHUB_TOKEN_2": "ghp_imported11111", "MIRROR_GITHUB_TOKEN": "ghp_imported11111"})
	for _, line := range []string{
		"moved env GITHUB_TOKEN of github into the vault as ${secret:GITHUB_TOKEN_2} (not GITHUB_TOKEN: the vault's GITHUB_TOKEN is another secret)",
		"moved env GITHUB_TOKEN of mirror into the vault as ${secret:MIRROR_GITHUB_TOKEN} (already there)",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("import's output lacks %q:\n%s", line, stdout)
		}
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "${secret:GITHUB_TOKEN_2}") {
		t.Errorf("the config does not use the name the secret got:\n%s", b)
	}
}

// The secrets of a server whose group the config already has, which the
// merge leaves alone without --force, are not written to the vault.
func TestImportVaultSkipsSecretsOfGroupsLeftAlone(t *testing.T) {
	home, secrets := importVaultSetup(t)
	out := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(out, []byte("groups:\n  github: {description: mine, command: node, args: [\"mine.js\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout := importVault(t, `{
		"github": {"command": "node", "args": ["a.js"], "env": {"GITHUB_TOKEN": "ghp_notTaken00000"}},
		"linear": {"command": "node", "args": ["b.js"], "env": {"LINEAR_API_KEY": "lin_api_taken0000"}}}`, out)
	wantSecrets(t, secrets, map[string]string{"LINEAR_API_KEY": "lin_api_taken0000"})
	if strings.Contains(stdout, "of github") || !strings.Contains(stdout, "already there, left alone: github") {
		t.Errorf("import's output:\n%s", stdout)
	}
}

// vaultSetMeanwhile is a vault whose every read is followed by another
// writer's set of name (another process's `secret set`, on the same
// file), done before the read returns: that set lands between the
// import's read of the vault and its write.
type vaultSetMeanwhile struct {
	*vault.Secrets
	other       *vault.Secrets
	name, value string
}

func (s vaultSetMeanwhile) All() (map[string]string, error) {
	m, err := s.Secrets.All()
	done := make(chan error, 1)
	go func() { done <- s.other.Set(s.name, s.value) }()
	if err := <-done; err != nil {
		return nil, err
	}
	return m, err
}

// A secret another process sets after the import read the vault, under
// the name the import chose, is kept: the import's goes under the next
// free name, as for a secret set before.
func TestImportVaultKeepsSecretSetMeanwhile(t *testing.T) {
	home, secrets := importVaultSetup(t)
	v, err := vault.Open(t.Context(), vault.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	other := vault.NewSecrets(home, v)
	servers := []clients.Server{{Name: "github", Command: "node", Env: map[string]string{"GITHUB_TOKEN": "ghp_imported11111"}}}
	found := literalSecrets(servers, []string{"github"}, func(int) bool { return true })
	var stdout bytes.Buffer
	racing := vaultSetMeanwhile{Secrets: secrets, other: other, name: "GITHUB_TOKEN", value: "ghp_setMeanwhile0"}
	if err := moveSecretsInto(racing, servers, found, &stdout); err != nil {
		t.Fatal(err)
	}
	wantSecrets(t, secrets, map[string]string{"GITHUB_TOKEN": "ghp_setMeanwhile0", "GITHUB_TOKEN_2": "ghp_imported11111"})
	if got := servers[0].Env["GITHUB_TOKEN"]; got != "${secret:GITHUB_TOKEN_2}" {
		t.Errorf("the server's env is %q, want the name the secret got", got)
	}
	if want := "as ${secret:GITHUB_TOKEN_2} (not GITHUB_TOKEN: the vault's GITHUB_TOKEN is another secret)"; !strings.Contains(stdout.String(), want) {
		t.Errorf("import's output lacks %q:\n%s", want, stdout.String())
	}
}

// A server whose name starts with a digit (1password's, 2fa) gets a vault
// name the config reads: ${secret:1PASSWORD_OP_TOKEN} is no name there,
// and the config import wrote refused to load, its secret in the vault
// under a name no command takes.
func TestImportVaultNameOfAServerStartingWithADigit(t *testing.T) {
	home, secrets := importVaultSetup(t)
	out := filepath.Join(home, "config.yaml")
	stdout := importVault(t, `{
		"1password": {"command": "node", "args": ["a.js"], "env": {"OP_SERVICE_ACCOUNT_TOKEN": "ops_first111111"}},
		"2fa": {"command": "node", "args": ["b.js"], "env": {"2FA_SECRET": "otp-second-222"}}}`, out)
	cfg, err := configs.Load(out)
	if err != nil {
		t.Fatalf("the config import wrote does not load: %v\n%s", err, stdout)
	}
	got, err := secrets.All()
	if err != nil {
		t.Fatal(err)
	}
	for name := range got {
		if !secretName().MatchString(name) {
			t.Errorf("the vault holds %s, a name secret set refuses", name)
		}
	}
	for _, g := range cfg.Groups {
		env := g.Servers[0].Env
		if g.Name == "1password" && env["OP_SERVICE_ACCOUNT_TOKEN"] != "ops_first111111" || g.Name == "2fa" && env["2FA_SECRET"] != "otp-second-222" {
			t.Errorf("group %s has env %v", g.Name, env)
		}
	}
}

// An import into a config another import is writing waits for it, from
// its read of the config to its write, whatever path names the config
// (here a link to it): the two read the config before either wrote it,
// and the second wrote over the groups the first added, or moved into the
// vault (for nothing) the secrets of a group it then found there and left
// alone, saying it had. The link leads to no file yet: one spelling of a
// config to be, the lock the same. Here the other holds the lock throughout, so the
// import gives up, having written nothing.
func TestImportWaitsForAnotherIntoTheSameConfig(t *testing.T) {
	home, secrets := importVaultSetup(t)
	out := filepath.Join(home, "config.yaml")
	link := filepath.Join(t.TempDir(), "linked.yaml") // to a config not written yet
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	// How long it waits; the other holds on past it whatever the machine.
	err := importWhileLocked(t, t.Context(), secrets, link, out, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "another import into") {
		t.Fatalf("import while another into the same config holds it: %v", err)
	}
}

// An import waiting for another into the same config stops waiting when
// it is interrupted (its context ends: a first Ctrl-C), rather than sit
// out the whole wait, having written nothing.
func TestImportWaitEndsWithItsContext(t *testing.T) {
	home, secrets := importVaultSetup(t)
	out := filepath.Join(home, "config.yaml")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // interrupted while it waits
	// The old code waited it out: the test then fails by its error.
	if err := importWhileLocked(t, ctx, secrets, out, out, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("import interrupted while another held the config: %v", err)
	}
}

// importWhileLocked runs import --vault into out with ctx while another
// import holds the lock of lockAt (out, or another spelling of it), the
// import waiting up to wait, and checks that it wrote neither the config
// nor the vault (secrets); it returns import's error.
func importWhileLocked(t *testing.T, ctx context.Context, secrets *vault.Secrets, lockAt, out string, wait time.Duration) error {
	t.Helper()
	other, err := lockOf(t.Context(), "import", samePath(lockAt), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	defer func(w time.Duration) { importLockWait = w }(importLockWait)
	importLockWait = wait
	src := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(src, []byte(`{"mcpServers":{"github": {"command": "node", "args": ["a.js"], "env": {"GITHUB_TOKEN": "ghp_waitsForTheOther0"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = run(ctx, []string{"import", src, "-o", out, "--vault"}, strings.NewReader(""), &stdout, &stderr)
	if now, rerr := os.ReadFile(out); rerr == nil {
		t.Errorf("the config was written meanwhile:\n%s", now)
	}
	wantSecrets(t, secrets, map[string]string{})
	if err != nil {
		t.Logf("%s%s", stdout.String(), stderr.String())
	}
	return err
}

// An import that waited for another into the same config decides what it
// moves into the vault, and what it says it wrote literally, on the
// config as the other left it: a group the other added meanwhile is left
// alone, and its server's secret is neither moved into the vault nor
// counted among those written (the config as first read had no such
// group).
func TestImportDecidesOnTheConfigTheOtherWrote(t *testing.T) {
	for _, flags := range [][]string{{"--vault"}, nil} {
		t.Run(strings.Join(append([]string{"import"}, flags...), " "), func(t *testing.T) {
			home, secrets := importVaultSetup(t)
			out := filepath.Join(home, "config.yaml")
			const theOthers = "groups:\n  github:\n    description: the other's\n    command: node\n    args: [b.js]\n"
			stdout, stderr := importAfterTheOther(t, out, theOthers, flags...)
			if now, _ := os.ReadFile(out); string(now) != theOthers {
				t.Errorf("the other's config written over:\n%s", now)
			}
			wantSecrets(t, secrets, map[string]string{})
			// The old code counted the secret of the config as first read.
			if strings.Contains(stderr, "written literally") || strings.Contains(stdout, "moved") {
				t.Errorf("a secret it did not write is reported:\n%s%s", stdout, stderr)
			}
		})
	}
}

// importAfterTheOther runs import (with flags) of a server holding a
// secret into out while another import holds the lock of out, and, once
// it has read the config and waits, writes theOthers to out and lets it
// go on; it returns what import printed.
func importAfterTheOther(t *testing.T, out, theOthers string, flags ...string) (stdout, stderr string) {
	t.Helper()
	other, err := lockOf(t.Context(), "import", samePath(out), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(src, []byte(`{"mcpServers":{"github": {"command": "node", "args": ["a.js"], "env": {"GITHUB_TOKEN": "ghp_decidedUnderLock0"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), append([]string{"import", src, "-o", out}, flags...), strings.NewReader(""), &o, &e)
	}()
	// It has read the config (there is none yet) and waits for the lock.
	waitForLockWait(t, ".importCmd(")
	if err := os.WriteFile(out, []byte(theOthers), 0o600); err != nil {
		t.Fatal(err)
	}
	other.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("import: %v\n%s%s", err, o.String(), e.String())
	}
	return o.String(), e.String()
}

// waitForLockWait waits until a goroutine of the function named by frame
// (".importCmd(") waits for a lock.
func waitForLockWait(t *testing.T, frame string) {
	t.Helper()
	await.Costly(t, time.Minute, "a wait for the lock in "+frame, func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "filelock.Acquire") && strings.Contains(g, frame) {
				return true
			}
		}
		return false
	})
}

// The note after an import that wrote a secret literally gives the command
// that moves it to the vault, quoted for a shell, and that command does:
// --vault alone would leave the servers imported already as they are.
func TestImportNoteMovesSecretsToTheVault(t *testing.T) {
	_, secrets := importVaultSetup(t)
	dir := filepath.Join(t.TempDir(), "my servers")
	os.Mkdir(dir, 0o700)
	src := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(src, []byte(`{"mcpServers":{"gh":{"command":"gh-mcp","env":{"GITHUB_TOKEN":"ghp_0123456789abcdefghijABCDEFGHIJ012345"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "config.yaml")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"import", src, "-o", out, "--describe", "gh=GitHub issues"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	_, command, ok := strings.Cut(stderr.String(), "to keep secrets in the vault instead: dynamic-mcp ")
	command, _, _ = strings.Cut(command, " (--force")
	words, err := exec.Command("sh", "-c", `eval "set -- $1"; for w in "$@"; do printf '%s\n' "$w"; done`, "sh", command).Output()
	if !ok || err != nil {
		t.Fatalf("the note: %s (%v)", stderr.String(), err)
	}
	args := strings.Split(strings.TrimSuffix(string(words), "\n"), "\n")
	if want := []string{"import", src, "-o", out, "--describe", "gh=GitHub issues", "--vault", "--force"}; !slices.Equal(args, want) {
		t.Fatalf("the note's command %s is, to a shell, %q; want %q", command, args, want)
	}
	stdout.Reset()
	stderr.Reset()
	if err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.String())
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "ghp_") || !strings.Contains(string(b), "GitHub issues") {
		t.Errorf("the config after %s:\n%s", command, b)
	}
	if got, err := secrets.All(); err != nil || len(got) != 1 {
		t.Errorf("the vault after %s: %v, %v", command, got, err)
	}
}
