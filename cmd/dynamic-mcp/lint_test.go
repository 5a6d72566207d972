package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate warns, and exits 0, for a command not found here and for
// secrets written literally (by name or by look) in env, headers, args and
// url, naming file, line, key and the vault command; a reference is none.
func TestValidateWarnsOfMissingCommandsAndLiteralSecrets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	src := `groups:
  gone: { description: x, command: dmcp-no-such-command }
  gh:
    description: y
    command: ` + fakeBin + `
    args: ["--token", "sk-abcdefghijklmnopqrstuv"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123
      SHOWN_AS: ghp_abcdefghijklmnopqrstuvwxyz0123
      REFERENCED: "${DMCP_TEST_UNSET_TOKEN:-}"
      PLAIN: hello
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
		path + `:2: groups.gone.command: "dmcp-no-such-command" is not on PATH here (fine if the client that starts the hub finds it`,
		path + ":6: groups.gh.args[1]: " + vault("GH_TOKEN"),
		path + ":8: groups.gh.env.GITHUB_PERSONAL_ACCESS_TOKEN: " + vault("GH_GITHUB_PERSONAL_ACCESS_TOKEN"),
		path + ":9: groups.gh.env.SHOWN_AS: " + vault("GH_SHOWN_AS"),
		path + ":15: groups.web.servers.api.url: " + vault("WEB_API_TOKEN"),
		path + ":15: groups.web.servers.api.headers.Authorization: " + vault("WEB_API_AUTHORIZATION"),
	} {
		if !strings.Contains(stderr, "warning: "+want) {
			t.Errorf("no warning %q in:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "warning:"); n != 6 {
		t.Errorf("%d warnings, want 6:\n%s", n, stderr)
	}
}
