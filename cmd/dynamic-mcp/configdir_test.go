package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// runIn runs a command line in this process (see runCommand) with dir as
// the working directory, which makes the test serial; "" leaves the
// directory as it is.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	return runCommand(t, "", args...)
}

// The quickstart lists the three groups' tools wherever it is run from,
// as it is from a client's entry.
func TestQuickstartFromAnyDirectory(t *testing.T) {
	for _, pkg := range []string{"server-everything", "server-filesystem", "server-memory"} {
		referenceServer(t, pkg) // installed, or the test says how
	}
	withHome(t, t.TempDir()) // the memory server's file
	t.Chdir(t.TempDir())
	// The example keeps the default connect_timeout, 10 s, which a node
	// server may exceed on a busy machine (tools starts each server once):
	// that failure, and only it, is run again.
	var out, errOut string
	var code int
	for attempt := 1; ; attempt++ {
		out, errOut, code = runIn(t, "", "tools", "-c", filepath.Join(repoDir, "examples", "quickstart.yaml"))
		if attempt == 3 || !strings.Contains(out, "no answer to initialize within") {
			break
		}
		t.Logf("a server of the quickstart took longer than connect_timeout to start; tools once more:\n%s", out)
	}
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s\n%s", code, out, errOut)
	}
	// trigger-sampling-request: the everything server offers it to a
	// client that says it samples, as the hub says to it; tools shows
	// what a client of the hub gets.
	for _, want := range []string{"\neverything ", "\n  echo ", "\n  trigger-sampling-request ", "\nfiles ", "\n  read_text_file ", "\nmemory ", "\n  create_entities "} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("no %q in:\n%s", strings.TrimSpace(want), out)
		}
	}
	if strings.Contains(out, "failed") {
		t.Errorf("a group failed:\n%s", out)
	}
}

// The quickstart's memory server keeps its file in the hub's directory
// under the user's home, private to them, not in a temporary directory
// every local user can read and write; with $DYNAMIC_MCP_HOME set, in
// the directory it names.
func TestQuickstartMemoryIsPrivate(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	withHome(t, home)
	t.Setenv("TMPDIR", tmp)
	for _, tc := range []struct{ name, hubHome, want string }{
		{"DYNAMIC_MCP_HOME unset", "", filepath.Join(home, ".dynamic-mcp")},
		{"DYNAMIC_MCP_HOME elsewhere", filepath.Join(tmp, "hub"), filepath.Join(tmp, "hub")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DYNAMIC_MCP_HOME", tc.hubHome)
			if tc.hubHome == "" {
				os.Unsetenv("DYNAMIC_MCP_HOME")
			}
			cfg, err := configs.Load(filepath.Join(repoDir, "examples", "quickstart.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(cfg.Groups, func(g *config.Group) bool { return g.Name == "memory" })
			if i < 0 {
				t.Fatal("no memory group in the quickstart")
			}
			if got, want := cfg.Groups[i].Servers[0].Env["MEMORY_FILE_PATH"], filepath.Join(tc.want, "quickstart-memory.jsonl"); got != want {
				t.Errorf("MEMORY_FILE_PATH %q, want %q", got, want)
			}
		})
	}
}

// A stdio server runs in its config file's directory: a relative command
// and relative args mean "next to the config", wherever the hub is run
// from; cwd: is relative to it too.
func TestToolsFromAnotherDirectory(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(cfgDir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fakeBin, filepath.Join(cfgDir, "fake")); err != nil {
		t.Fatal(err)
	}
	for path, script := range map[string]string{
		"run.sh":     "exec ./fake\n",  // started with cwd = the config's directory
		"sub/run.sh": "exec ../fake\n", // started with cwd: sub
	} {
		if err := os.WriteFile(filepath.Join(cfgDir, path), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(cfgDir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`
groups:
  command:
    description: a relative command
    command: ./fake
  args:
    description: a relative argument
    command: sh
    args: [run.sh]
  cwd:
    description: a relative cwd
    command: sh
    args: [run.sh]
    cwd: sub
  config_dir:
    description: the config's directory by name
    command: sh
    args: ["${CONFIG_DIR}/sub/run.sh"]
    cwd: ${CONFIG_DIR}/sub
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ dir, config string }{
		"absolute config path elsewhere": {t.TempDir(), cfg},
		"relative config path":           {dir, filepath.Join("conf", "config.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runIn(t, tc.dir, "tools", "-c", tc.config)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if n := strings.Count(out, "\n  echo "); n != 4 {
				t.Errorf("%d of 4 groups list echo:\n%s", n, out)
			}
		})
	}
}

// tools and status exit 1 when a group failed, and show why: the
// decisive stderr line of a child that exited at start first, then its
// last lines.
func TestToolsAndStatusExitOneWhenAGroupFails(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	// nodeWaits: node's own start, under load, must fail it, not the
	// hub's connect timeout.
	if err := os.WriteFile(cfg, []byte(`
settings: { `+nodeWaits+` }
groups:
  good:
    description: a server that starts
    command: `+fakeBin+`
  broken:
    description: a script that is not there
    command: node
    args: [missing.js]
  off:
    description: a disabled server
    command: `+fakeBin+`
    disabled: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := regexp.QuoteMeta("exited (status 1): Error: Cannot find module '" + filepath.Join(dir, "missing.js") + "'")

	out, errOut, code := runIn(t, "", "tools", "-c", cfg)
	if code != 1 {
		t.Errorf("tools: exit %d, want 1", code)
	}
	if !strings.Contains(errOut, "not every upstream is ready: broken failed (the reasons are above)") || strings.Contains(errOut, "good") || strings.Contains(errOut, "off") ||
		strings.Contains(errOut, "upstream unavailable") { // said once, in its place, not at every try

		t.Errorf("tools: stderr %q", errOut)
	}
	if !regexp.MustCompile(`(?m)^  \(broken failed: `+missing+`\)\n(      .*\n)*      Node\.js v`).MatchString(out) || !strings.Contains(out, "\n  echo ") {
		t.Errorf("tools does not show why broken failed:\n%s", out)
	}

	out, errOut, code = runIn(t, "", "status", "-c", cfg)
	if code != 1 || !strings.Contains(errOut, "not every upstream is ready: broken failed") || strings.Contains(errOut, "upstream unavailable") {
		t.Errorf("status: exit %d (want 1), stderr:\n%s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^broken\s+broken\s+stdio\s+failed\s+-\s+-\s+-\s+`+missing+`$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^broken: `+missing+`\n(  .*\n)*  Node\.js v`).MatchString(out) {
		t.Errorf("status does not show why broken failed:\n%s", out)
	}

	// Only the group asked for is started, and counts; the output says
	// what that leaves unchecked.
	if out, errOut, code := runIn(t, "", "tools", "-c", cfg, "--log-level", "debug", "good"); code != 0 || strings.Contains(out, "broken") || strings.Contains(errOut, "upstream=broken") ||
		!strings.Contains(out, "good alone: dynamic-mcp tools -c "+cfg+" lists every group") {
		t.Errorf("tools good: exit %d\n%s\n%s", code, out, errOut)
	}
}

// tools, which starts the upstreams, reports policy rules that name an
// argument their tool does not have, with the tool's real arguments
// (validate cannot: it starts nothing).
func TestToolsWarnsOfUnknownArguments(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`
groups:
  f:
    description: fake
    command: `+fakeBin+`
    policy:
      - {name: typo, action: deny, tool: echo, args: {txt: "x"}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runIn(t, "", "tools", "-c", cfg)
	want := `warning: policy rule typo names argument "txt", which tool echo of f/f does not have (its arguments: ms, text)`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want %q in:\n%s\n%s", code, want, out, errOut)
	}
}
