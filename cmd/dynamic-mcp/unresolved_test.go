package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// A group waiting for a secret or a variable is unavailable with the
// command that fixes it, and the others serve; the hint, pasted, sets the
// secret, and the hub starts the group without being told; validate
// warns and exits 0.
func TestGroupWaitingForASecretFailsAlone(t *testing.T) {
	key := bytes.Repeat([]byte{11}, vault.KeySize)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	state := t.TempDir()
	path := filepath.Join(t.TempDir(), "config.yaml")
	src := fmt.Sprintf(`state_dir: %s
groups:
  ok: { description: serves, command: %q }
  vaulted:
    description: needs a secret
    command: %q
    env: { TOKEN: "${secret:DMCP_VAULTED}" }
  envy: { description: needs a variable, command: %q, args: ["-name", "${DMCP_TEST_NEVER_SET}"] }
`, state, fakeBin, fakeBin, fakeBin)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCommand(t, "", "validate", "-c", path)
	wantWarn := path + ":8: groups.envy.args[1]: environment variable DMCP_TEST_NEVER_SET is not set, so group envy is unavailable until it is: export DMCP_TEST_NEVER_SET=..."
	if code != 0 || !strings.Contains(stdout, "OK") || !strings.Contains(stderr, wantWarn) ||
		!strings.Contains(stderr, path+":7: groups.vaulted.env.TOKEN: secret DMCP_VAULTED is not set, so group vaulted is unavailable until it is: run: dynamic-mcp secret set DMCP_VAULTED -c "+path) {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}

	c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + t.TempDir()}, hubBin, "serve", "-c", path, "--log-level", "debug")
	c.initialize("2025-06-18")
	c.waitGroupsReady("ok")
	desc := dynamicDescription(t, c)
	hint := regexp.MustCompile(`- vaulted: needs a secret \(unavailable: secret DMCP_VAULTED is not set \(run: (dynamic-mcp [^)]*)\)\)`).FindStringSubmatch(desc)
	if hint == nil || !strings.Contains(desc, "- envy: needs a variable (unavailable: environment variable DMCP_TEST_NEVER_SET is not set") {
		t.Fatalf("get_dynamic_tools' description:\n%s", desc)
	}
	text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "vaulted", "name": "echo", "args": map[string]any{"text": "x"}}}))
	if !isErr || !strings.Contains(text, "secret DMCP_VAULTED is not set (run: "+hint[1]+")") {
		t.Fatalf("a call to the waiting group: %q", text)
	}
	if text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "ok", "name": "echo", "args": map[string]any{"text": "served"}}})); isErr || text != "served" {
		t.Fatalf("the group beside it: %q", text)
	}

	// The hint, as pasted, sets the secret; the hub starts the group.
	if out, errOut, code := runCommand(t, "sk-pasted-1\n", shellWords(t, hint[1])[1:]...); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", hint[1], code, out, errOut)
	}
	c.waitGroupsReady("ok", "vaulted")
	if text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "vaulted", "name": "echo", "args": map[string]any{"text": "now"}}})); isErr || text != "now" {
		t.Fatalf("the group once its secret is set: %q", text)
	}
}

// dynamicDescription is get_dynamic_tools' description.
func dynamicDescription(t *testing.T, c *client) string {
	t.Helper()
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.call("tools/list", nil), &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "get_dynamic_tools" {
			return tool.Description
		}
	}
	t.Fatal("no get_dynamic_tools")
	return ""
}

// import lists the variables the config it wrote needs, with how to set
// each; install takes that config (the hub serves the groups that need
// nothing) and says what waits, where it refused it before.
func TestImportAndInstallAConfigWaitingForAVariable(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	t.Setenv("EXAMPLE_KEY", "")
	os.Unsetenv("EXAMPLE_KEY")
	placeFixture(t, home, "cursor")
	cfg := filepath.Join(home, ".dynamic-mcp", "config.yaml")
	out, errOut, err := runCLI(t, "import", "cursor")
	want := "set these before the groups that use them can start:\n" +
		"  environment variable EXAMPLE_KEY (group remote): export EXAMPLE_KEY=... where the hub starts, or run: dynamic-mcp secret set EXAMPLE_KEY and write ${secret:EXAMPLE_KEY}\n"
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runCLI(t, "install", "cursor", "--force")
	if err != nil || !strings.Contains(out, "warning: "+cfg+":") || !strings.Contains(out, "groups.remote.headers.X-Api-Key: environment variable EXAMPLE_KEY is not set, so group remote is unavailable until it is") {
		t.Fatalf("install: %v\n%s%s", err, out, errOut)
	}
}
