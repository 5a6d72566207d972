package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// secret set takes the value from stdin, never argv; list shows names and
// where the config uses them, never values; rm removes; the config then
// fails naming the secret.
func TestSecretCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, vault.KeySize)))
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	src := fmt.Sprintf("state_dir: %s\ngroups:\n  a: {description: x, command: srv, env: {KEY: \"${secret:API_KEY}\"}}\n", state)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := loadProblem(cfg); err == nil || !strings.Contains(err.Error(), "secret API_KEY is not set") {
		t.Fatalf("Load before set: %v", err)
	}
	run1 := func(stdin string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
		return out.String() + errb.String(), err
	}
	if out, err := run1("sk-from-stdin-42\n", "secret", "set", "API_KEY", "-c", cfg); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	out, err := run1("", "secret", "list", "-c", cfg)
	if err != nil || !strings.Contains(out, "API_KEY\tused at groups.a.env.KEY") || strings.Contains(out, "sk-from-stdin-42") {
		t.Fatalf("secret list: %v\n%s", err, out)
	}
	c, err := configs.Load(cfg)
	if err != nil || c.Groups[0].Servers[0].Env["KEY"] != "sk-from-stdin-42" {
		t.Fatalf("Load after set: %v", err)
	}
	if err := filepath.Walk(state, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("sk-from-stdin-42")) {
				t.Errorf("%s holds the secret in plaintext", p)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := run1("", "secret", "rm", "API_KEY", "-c", cfg); err != nil || !strings.Contains(out, "still uses it at groups.a.env.KEY") {
		t.Fatalf("secret rm: %v\n%s", err, out)
	}
	if err := loadProblem(cfg); err == nil || !strings.Contains(err.Error(), "secret API_KEY is not set") {
		t.Fatalf("Load after rm: %v", err)
	}
	if _, err := run1("", "secret", "set", "API_KEY", "-c", cfg); err == nil {
		t.Fatal("secret set with nothing on stdin succeeded")
	}
}

// secret set and rm say what to do with a name missing, malformed or
// mistyped: the names the config uses, the one it likely meant. A
// mistyped name is not set (the config would go on waiting for the one
// it uses); a name near none the config uses is, as before.
func TestSecretCommandSaysWhatToDo(t *testing.T) {
	state := t.TempDir()
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, vault.KeySize)))
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	src := fmt.Sprintf("state_dir: %s\ngroups:\n  a: {description: x, command: srv, env: {KEY: \"${secret:API_KEY}\", GH: \"${secret:GITHUB_TOKEN}\"}}\n", state)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	// What the user reads: the output, then the error main prints.
	run1 := func(stdin string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
		if err != nil {
			errb.WriteString(err.Error())
		}
		return out.String() + errb.String(), err
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"secret", "set", "-c", cfg}, "secret set needs the secret's NAME: the config uses API_KEY, GITHUB_TOKEN (dynamic-mcp secret list -c " + cfg + " says which are set)"},
		{[]string{"secret", "set", "github-token", "-c", cfg}, `secret name "github-token": use letters, digits and _, not starting with a digit; did you mean GITHUB_TOKEN, which the config uses?`},
		{[]string{"secret", "set", "GITHUB_TOKNE", "-c", cfg}, "the config uses no secret GITHUB_TOKNE: did you mean GITHUB_TOKEN? (nothing was set: run dynamic-mcp secret set GITHUB_TOKEN -c " + cfg + "; to keep GITHUB_TOKNE for later, write ${secret:GITHUB_TOKNE} in the config first)"},
	} {
		if out, err := run1("v-42\n", tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%q: %v\n%s\nwant %q", tc.args, err, out, tc.want)
		}
	}
	if out, err := run1("v-42\n", "secret", "set", "API_KEY", "-c", cfg); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	if out, err := run1("", "secret", "rm", "API_KYE", "-c", cfg); err == nil || !strings.Contains(out, "secret API_KYE is not set: did you mean API_KEY?") {
		t.Errorf("rm of a mistyped name: %v\n%s", err, out)
	}
	if out, err := run1("v-43\n", "secret", "set", "LATER_ONE", "-c", cfg); err != nil || !strings.Contains(out, "the config does not use it yet: write ${secret:LATER_ONE}") {
		t.Errorf("set of a name for later: %v\n%s", err, out)
	}
	out, err := run1("", "secret", "list", "-c", cfg)
	if err != nil || strings.Contains(out, "GITHUB_TOKNE") || !strings.Contains(out, "GITHUB_TOKEN\tNOT SET") {
		t.Errorf("secret list: %v\n%s", err, out)
	}
}

// loadProblem is the error of loading the config at path, or else why its
// first server is unavailable (an unset variable or missing secret),
// or nil.
func loadProblem(path string) error {
	cfg, err := configs.Load(path)
	if err != nil {
		return err
	}
	return cfg.Groups[0].Servers[0].Unavailable()
}

// ${secret:NAME} in a server's env: reaches the child (the reference
// server's get-env shows its environment), and the child's echo of it
// reaches the client as [secret:NAME], not the value.
func TestSecretReachesChildEnv(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	key := bytes.Repeat([]byte{6}, vault.KeySize)
	v, _ := vault.New(key, "test")
	if err := vault.NewSecrets(state, v).Set("CHILD_KEY", "sk-child-secret-7"); err != nil {
		t.Fatal(err)
	}
	c := startHubEnv(t, []string{vault.EnvKey + "=" + base64.StdEncoding.EncodeToString(key)}, fmt.Sprintf(`
state_dir: %s
settings: { `+nodeWaits+` }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
    env: { DMCP_TEST_VAULTED: "${secret:CHILD_KEY}" }
`, state, yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-06-18")
	c.waitGroupsReady("everything")
	res := c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "everything", "name": "get-env", "args": map[string]any{}}})
	env, isErr := toolText(t, res)
	if isErr || !strings.Contains(env, "DMCP_TEST_VAULTED") || !strings.Contains(env, "[secret:CHILD_KEY]") || strings.Contains(env, "sk-child-secret-7") {
		t.Fatalf("get-env through the hub:\n%s", env)
	}
}

// ${secret:NAME} in a remote server's headers: goes on every request to it.
func TestSecretReachesUpstreamHeader(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	key := bytes.Repeat([]byte{8}, vault.KeySize)
	v, _ := vault.New(key, "test")
	if err := vault.NewSecrets(state, v).Set("UP_KEY", "sk-header-secret-9"); err != nil {
		t.Fatal(err)
	}
	up, seen := recordingUpstream(t)
	c := startHubEnv(t, []string{vault.EnvKey + "=" + base64.StdEncoding.EncodeToString(key)}, fmt.Sprintf(`
mode: flat
state_dir: %s
groups:
  r:
    description: records headers
    url: %q
    headers: { X-Upstream-Key: "Key ${secret:UP_KEY}" }
`, state, up.URL+"/mcp"))
	c.initialize("2025-06-18")
	c.waitFlatTools(1)
	headers := seen()
	if len(headers) == 0 {
		t.Fatal("the upstream saw no request")
	}
	for _, h := range headers {
		if got := h.Get("X-Upstream-Key"); got != "Key sk-header-secret-9" {
			t.Errorf("upstream header %q", got)
		}
	}
}

// A server that echoes a secret (get-env answers its environment) shows
// [secret:NAME] to the client, in the inspector's export and in the audit
// trail, never the value; a child that prints it on stderr shows it in
// the hub's log as [secret:ECHOED]. The vault's key is in the fallback file here,
// and the hub says so in its log.
func TestSecretRedactedEverywhere(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	key := bytes.Repeat([]byte{9}, vault.KeySize)
	if err := os.WriteFile(filepath.Join(state, vault.KeyFile), []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	v, _ := vault.New(key, "test")
	const value = "sk-echoed-secret-10"
	if err := vault.NewSecrets(state, v).Set("ECHOED", value); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	base, stderr := startHTTPHub(t, fmt.Sprintf(`
mode: flat
state_dir: %s
settings: { `+nodeWaits+` }
audit: { path: %s, arguments: true }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
    env: { DMCP_TEST_ECHOED: "${secret:ECHOED}" }
  fake:
    description: answers errors that quote its environment
    command: %s
    env: { DMCP_TEST_ECHOED: "${secret:ECHOED}" }
  leak:
    description: prints its key on stderr
    command: sh
    args: ["-c", "echo leaked $$DMCP_TEST_LEAK >&2; exit 1"]
    env: { DMCP_TEST_LEAK: "${secret:ECHOED}" }
`, state, audit, yamlList(referenceServer(t, "server-everything", "stdio")[1:]), fakeBin))
	c := httpClient(t, base, nil)
	c.initialize("2025-11-25")
	// The fake's tools may come first: wait for the everything server's.
	await.Costly(t, 60*time.Second, "everything__get-env", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), `"everything__get-env"`)
	})
	res := string(c.call("tools/call", map[string]any{"name": "everything__get-env"}))
	if !strings.Contains(res, "[secret:ECHOED]") || strings.Contains(res, value) {
		t.Fatalf("get-env through the hub: %s", res)
	}
	// An upstream's error that quotes the value (from its environment)
	// reaches the client with the mark too.
	c.waitFlatTools(2)
	res2, rpcErr := c.request("tools/call", map[string]any{"name": "fake__fail", "arguments": map[string]any{"text": "env:DMCP_TEST_ECHOED"}})
	errJSON, _ := json.Marshal(rpcErr)
	failed := string(res2) + string(errJSON)
	if !strings.Contains(failed, "[secret:ECHOED]") || strings.Contains(failed, value) {
		t.Errorf("an upstream error through the hub: %s", failed)
	}
	export := inspectorExport(t, base, uiToken(t, stderr))
	if !strings.Contains(export, "[secret:ECHOED]") || strings.Contains(export, value) {
		t.Errorf("the inspector's export:\n%s", export)
	}
	b, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(b), "get-env") || strings.Contains(string(b), value) {
		t.Errorf("the audit trail (%v):\n%s", err, b)
	}
	await.Costly(t, 10*time.Second, "the leaking child's stderr in the hub's log", func() bool {
		return strings.Contains(stderr.String(), "leaked [secret:ECHOED]")
	})
	if log := stderr.String(); strings.Contains(log, value) || strings.Count(log, "the data key is in a file") != 1 {
		t.Errorf("the hub's log holds the value, or does not say once where the key is:\n%s", log)
	}
}

// import --vault moves a literal secret of a client's config into the
// vault and writes the reference; the config then loads with it.
func TestImportMovesSecretsToVault(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	out := filepath.Join(home, "a.yaml")
	fixture := filepath.Join(repoDir, "testdata", "clients", "claude-desktop.json")
	stdout, stderr, err := runBinary(t, home, "import", fixture, "-o", out, "--vault")
	if err != nil || !strings.Contains(stdout, "${secret:GITHUB_PERSONAL_ACCESS_TOKEN}") {
		t.Fatalf("import --vault: %v\n%s%s", err, stdout, stderr)
	}
	cfg, _ := os.ReadFile(out)
	if strings.Contains(string(cfg), "ghp_literalSecretValue123") || !strings.Contains(string(cfg), "${secret:GITHUB_PERSONAL_ACCESS_TOKEN}") {
		t.Fatalf("the config:\n%s", cfg)
	}
	stdout, stderr, err = runBinary(t, home, "secret", "list", "-c", out)
	if err != nil || !strings.Contains(stdout, "GITHUB_PERSONAL_ACCESS_TOKEN\tused at groups.github.env.GITHUB_PERSONAL_ACCESS_TOKEN") {
		t.Fatalf("secret list: %v\n%s%s", err, stdout, stderr)
	}
	if _, stderr, err := runBinary(t, home, "validate", "-c", out); err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr)
	}
}

// An upstream's log message (notifications/message) that quotes a secret
// reaches the client as [secret:NAME], as its results do.
func TestSecretRedactedInUpstreamLog(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	key := bytes.Repeat([]byte{5}, vault.KeySize)
	v, _ := vault.New(key, "test")
	const value = "sk-logged-secret-11"
	if err := vault.NewSecrets(state, v).Set("LOGGED", value); err != nil {
		t.Fatal(err)
	}
	c := startHubEnv(t, []string{vault.EnvKey + "=" + base64.StdEncoding.EncodeToString(key)}, fmt.Sprintf(`
mode: flat
state_dir: %s
groups:
  f: { description: fake, command: %q, env: { DMCP_TEST_LOGGED: "${secret:LOGGED}" } }
`, state, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(1)
	c.call("logging/setLevel", map[string]any{"level": "debug"})
	c.callText("f__log", map[string]any{"text": "env:DMCP_TEST_LOGGED"})
	var got []string
	await.Costly(t, 10*time.Second, "the upstream's log message", func() bool {
		got = got[:0]
		for _, n := range c.notesOf("notifications/message") {
			b, _ := json.Marshal(n.Params)
			got = append(got, string(b))
		}
		return len(got) > 0
	})
	for _, n := range got {
		if strings.Contains(n, value) || !strings.Contains(n, "[secret:LOGGED]") {
			t.Errorf("the log message reached the client as %s", n)
		}
	}
}
