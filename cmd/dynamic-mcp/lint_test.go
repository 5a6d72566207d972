package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate warns, and exits 0, for a command not found here and for
// secrets written literally (by name or by look) in env, headers, args and
// url, naming file, line, key and the vault command (a name that already
// starts with the group's is not doubled); a reference is none.
func TestValidateWarnsOfMissingCommandsAndLiteralSecrets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	src := `groups:
  gone:
    description: x
    command: dmcp-no-such-command
  gh:
    description: y
    command: ` + fakeBin + `
    args: ["--token", "sk-abcdefghijklmnopqrstuv"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123
      SHOWN_AS: ghp_abcdefghijklmnopqrstuvwxyz0123
      REFERENCED: "${DMCP_TEST_UNSET_TOKEN:-}"
      PLAIN: hello
  github:
    description: the group's name starts the variable's
    command: ` + fakeBin + `
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123 }
  web:
    description: z
    servers:
      api: { url: "https://h.example/mcp?api_key=abc123", headers: { Authorization: "Bearer abcdefgh12345" } }
      fine: { url: "https://h.example/mcp" }
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCommand(t, "", "validate", "-c", path)
	if code != 0 || !strings.Contains(stdout, "OK") {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	vault := func(name string) string {
		return "looks like a secret written literally: keep it in the vault (dynamic-mcp secret set " + name + " -c " + path + ") and write ${secret:" + name + "} here"
	}
	for _, want := range []string{
		path + `:4: groups.gone.command: "dmcp-no-such-command" is not on PATH here (fine if the client that starts the hub finds it`,
		path + ":8: groups.gh.args[1]: " + vault("GH_TOKEN"),
		path + ":10: groups.gh.env.GITHUB_PERSONAL_ACCESS_TOKEN: " + vault("GH_GITHUB_PERSONAL_ACCESS_TOKEN"),
		path + ":11: groups.gh.env.SHOWN_AS: " + vault("GH_SHOWN_AS"),
		path + ":17: groups.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: " + vault("GITHUB_PERSONAL_ACCESS_TOKEN"),
		path + ":21: groups.web.servers.api.url: " + vault("WEB_API_TOKEN"),
		path + ":21: groups.web.servers.api.headers.Authorization: " + vault("WEB_API_AUTHORIZATION"),
	} {
		if !strings.Contains(stderr, "warning: "+want) {
			t.Errorf("no warning %q in:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "warning:"); n != 7 {
		t.Errorf("%d warnings, want 7:\n%s", n, stderr)
	}
}

// validate counts in English: one group, one server.
func TestValidateCountsOneGroup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("groups:\n  one: { description: x, command: "+fakeBin+" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCommand(t, "", "validate", "-c", path)
	if want := path + ": OK (dynamic mode, 1 group, 1 server)\n"; code != 0 || stdout != want {
		t.Fatalf("validate: exit %d, stdout %q, want %q\n%s", code, stdout, want, stderr)
	}
}

// A mistyped command gets the one it most likely meant, without the whole
// usage; an unknown flag says where the command's flags are listed.
func TestMistypedCommandAndFlag(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCommand(t, "", "tool", "-c", "x.yaml")
	if want := `dynamic-mcp: unknown command "tool": did you mean tools? (dynamic-mcp help lists the commands)` + "\n"; code != 2 || stderr != want || stdout != "" {
		t.Errorf("tool: exit %d, stderr %q, want %q", code, stderr, want)
	}
	_, stderr, code = runCommand(t, "", "serve", "--bogus")
	if want := "flag provided but not defined: -bogus (dynamic-mcp serve -h lists its flags)"; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("serve --bogus: exit %d, stderr %q, want %q", code, stderr, want)
	}
	if _, stderr, code = runCommand(t, "", "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command or config file "frobnicate"`) {
		t.Errorf("frobnicate: exit %d, stderr %q", code, stderr)
	}
}

// A config given without its -c is not ignored (for the default config,
// or "no config"): the command says where it goes.
func TestConfigWithoutDashC(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"validate", "tools", "status"} {
		_, stderr, code := runCommand(t, "", cmd, "examples/quickstart.yaml")
		if want := "the config goes after -c: dynamic-mcp " + cmd + " -c examples/quickstart.yaml"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s examples/quickstart.yaml: exit %d, stderr %q, want %q", cmd, code, stderr, want)
		}
	}
}

// help COMMAND is COMMAND -h: that command's usage and flags, not the
// list of every command.
func TestHelpOfACommand(t *testing.T) {
	t.Parallel()
	out, errOut, err := runBinary(t, t.TempDir(), "help", "import")
	if err != nil || !strings.HasPrefix(out, "usage: dynamic-mcp import ") || !strings.Contains(out, "--vault") {
		t.Errorf("help import: %v\n%s%s", err, out, errOut)
	}
}
