package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// clientFixtures maps each client to its fixture in testdata/clients.
var clientFixtures = map[string]string{
	"claude-desktop":  "claude-desktop.json",
	"claude-code":     "claude-code.json",
	"cursor":          "cursor.json",
	"vscode":          "vscode.json",
	"vscode-settings": "vscode-settings.json",
	"windsurf":        "windsurf.json",
	"cline":           "cline.json",
	"codex":           "codex.toml",
	"gemini":          "gemini.json",
	"opencode":        "opencode.json",
	"zed":             "zed.json",
}

// runCLI runs a command line in this process (see runCommand) and
// returns its stdout, its stderr and an error for an exit status but 0.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	stdout, stderr, code := runCommand(t, "", args...)
	if code != 0 {
		return stdout, stderr, fmt.Errorf("exit status %d", code)
	}
	return stdout, stderr, nil
}

// runBinary runs the hub's command (hubBin) with HOME and DYNAMIC_MCP_HOME
// in home, for a test that must run in parallel with others or ends in a
// process anyway.
func runBinary(t *testing.T, home string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(hubBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "DYNAMIC_MCP_HOME="+filepath.Join(home, ".dynamic-mcp"), "DYNAMIC_MCP_CONFIG=", "CODEX_HOME=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func TestImportEveryClientFormat(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoDir, "testdata", "clients")
	names := append([]string{"dynamic-mcp.json"}, sortedValues(clientFixtures)...)
	for _, fixture := range names {
		t.Run(fixture, func(t *testing.T) {
			home := t.TempDir()
			out := filepath.Join(home, "imported.yaml")
			_, notes, err := runCLI(t, "import", filepath.Join(dir, fixture), "-o", out)
			if err != nil {
				t.Fatalf("import: %v\n%s", err, notes)
			}
			got, _ := os.ReadFile(out)
			golden := filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(fixture, ".json"), ".toml")+".yaml")
			if *update {
				os.WriteFile(golden, got, 0o644)
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("import of %s:\n%s\nwant:\n%s", fixture, got, want)
			}
			// What import writes is a config the hub accepts, once the
			// variables it refers to are set.
			if _, errOut, err := runCLI(t, "validate", "-c", out); err != nil && !strings.Contains(errOut, "is not set") {
				t.Errorf("validate: %v\n%s", err, errOut)
			}
		})
	}
}

func sortedValues(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func TestImportNotesSecretsAndInputsWithoutValues(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(repoDir, "testdata", "clients")
	// One note of a literal secret, not one per secret and another of
	// them all with other advice.
	_, notes, err := runCLI(t, "import", filepath.Join(dir, "claude-desktop.json"), "-o", filepath.Join(home, "a.yaml"))
	if err != nil || !strings.Contains(notes, "note: 1 secret written literally into "+filepath.Join(home, "a.yaml")+" (GITHUB_PERSONAL_ACCESS_TOKEN of github);") ||
		strings.Count(notes, "GITHUB_PERSONAL_ACCESS_TOKEN") != 1 || strings.Contains(notes, "ghp_literal") {
		t.Errorf("secret note: %v\n%s", err, notes)
	}
	// An input is a variable, which the list of what to set names once.
	out, notes, _ := runCLI(t, "import", filepath.Join(dir, "vscode.json"), "-o", filepath.Join(home, "b.yaml"))
	if !strings.Contains(notes, `input "perplexity-key" becomes ${PERPLEXITY_KEY}`) ||
		!strings.Contains(out, "environment variable PERPLEXITY_KEY (group perplexity): export PERPLEXITY_KEY=...") ||
		strings.Count(notes, "PERPLEXITY_KEY") != 1 {
		t.Errorf("input note:\n%s%s", notes, out)
	}
	// Without a terminal, import never asks: a placeholder, which validate
	// warns about.
	_, warn, err := runCLI(t, "validate", "-c", filepath.Join(home, "a.yaml"))
	if err != nil || !strings.Contains(warn, "has the description import left for it") {
		t.Errorf("validate warning: %v\n%s", err, warn)
	}
	// --describe gives one, and a second import merges, leaving what is there.
	out, _, err = runCLI(t, "import", filepath.Join(dir, "windsurf.json"), "-o", filepath.Join(home, "a.yaml"), "--describe", `brave=Search the web with Brave`)
	if err != nil || !strings.Contains(out, "2 servers imported") {
		t.Errorf("merge: %v %s", err, out)
	}
	out, _, _ = runCLI(t, "import", filepath.Join(dir, "windsurf.json"), "-o", filepath.Join(home, "a.yaml"))
	if !strings.Contains(out, "0 servers imported") || !strings.Contains(out, "left alone: brave, figma") {
		t.Errorf("second merge: %s", out)
	}
	cfg, _ := os.ReadFile(filepath.Join(home, "a.yaml"))
	if !strings.Contains(string(cfg), "description: Search the web with Brave") || strings.Count(string(cfg), "\n  filesystem:") != 1 {
		t.Errorf("merged config:\n%s", cfg)
	}
}

// placeFixture puts a client's fixture where that client keeps its config
// under home, and returns the path.
func placeFixture(t *testing.T, home, client string) (string, []byte) {
	t.Helper()
	env := clients.Env{Home: home, OS: "linux"}
	c, err := clients.Find(env, client)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := c.Path(env, "")
	data, err := os.ReadFile(filepath.Join(repoDir, "testdata", "clients", clientFixtures[client]))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestInstallThenUninstallLeavesEveryClientConfigAsItWas(t *testing.T) {
	for _, client := range sortedKeys(clientFixtures) {
		t.Run(client, func(t *testing.T) {
			home := t.TempDir()
			withHome(t, home)
			path, before := placeFixture(t, home, client)
			cfg := filepath.Join(home, "hub.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)

			// --config, as every command takes it; -c below.
			out, errOut, err := runCLI(t, "install", client, "--config", cfg, "--dry-run")
			if err != nil || !strings.Contains(out, "+") || !strings.Contains(out, "dynamic-mcp") {
				t.Fatalf("dry run: %v\n%s%s", err, out, errOut)
			}
			if now, _ := os.ReadFile(path); string(now) != string(before) {
				t.Fatal("--dry-run wrote the file")
			}
			if _, errOut, err := runCLI(t, "install", client, "-c", cfg, "--force"); err != nil {
				t.Fatalf("install: %v\n%s", err, errOut)
			}
			after, _ := os.ReadFile(path)
			// The client now has one server: the hub, by absolute paths;
			// import names it and takes nothing.
			env := clients.Env{Home: home, OS: "linux"}
			servers, _, err := clients.ForFile(env, path, after).Read(after)
			if err != nil || len(servers) != 1 || servers[0].Name != "dynamic-mcp" || !filepath.IsAbs(servers[0].Command) || !slices.Contains(servers[0].Args, cfg) {
				t.Errorf("installed config reads as %+v (%v)\n(file:\n%s)", servers, err, after)
			}
			if _, errOut, err := runCLI(t, "import", path, "-o", filepath.Join(home, "check.yaml")); err == nil || !strings.Contains(errOut, "dynamic-mcp runs dynamic-mcp itself") {
				t.Errorf("import of the installed config: %v\n%s", err, errOut)
			}
			backups := backupsOf(path)
			if len(backups) != 1 {
				t.Errorf("want one backup of %s, got %v", path, backups)
			} else if b, _ := os.ReadFile(backups[0]); string(b) != string(before) {
				t.Error("the backup is not the file as it was")
			}
			if _, errOut, err := runCLI(t, "uninstall", client); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, errOut)
			}
			if now, _ := os.ReadFile(path); string(now) != string(before) {
				t.Errorf("after install and uninstall the file differs:\n%s\nwant:\n%s", now, before)
			}
		})
	}
}

func TestUninstallAfterTheUserEditedRestoresTheServers(t *testing.T) {
	for _, client := range []string{"cursor", "codex"} {
		t.Run(client, func(t *testing.T) {
			home := t.TempDir()
			withHome(t, home)
			path, _ := placeFixture(t, home, client)
			cfg := filepath.Join(home, "hub.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
			if _, errOut, err := runCLI(t, "install", client, "-c", cfg, "--force"); err != nil {
				t.Fatalf("install: %v\n%s", err, errOut)
			}
			now, _ := os.ReadFile(path)
			edited := strings.Replace(string(now), "\n", "\n// edited by the user\n", 1)
			if client == "codex" {
				edited = strings.Replace(string(now), "\n", "\n# edited by the user\n", 1)
			}
			os.WriteFile(path, []byte(edited), 0o644)
			if _, errOut, err := runCLI(t, "uninstall", client); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, errOut)
			}
			restored, _ := os.ReadFile(path)
			if !strings.Contains(string(restored), "edited by the user") || strings.Contains(string(restored), "dynamic-mcp") {
				t.Errorf("restored:\n%s", restored)
			}
			_, _, err := runCLI(t, "import", path, "-o", filepath.Join(home, "check.yaml"))
			check, _ := os.ReadFile(filepath.Join(home, "check.yaml"))
			if err != nil || strings.Count(string(check), "description:") < 2 {
				t.Errorf("the servers did not come back:\n%s", check)
			}
		})
	}
}

func TestMalformedClientConfigIsNeverOverwritten(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	path, _ := placeFixture(t, home, "cursor")
	broken := []byte(`{"mcpServers": {"a": {"command": "x"},,}`)
	os.WriteFile(path, broken, 0o644)
	cfg := filepath.Join(home, "hub.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
	_, errOut, err := runCLI(t, "install", "cursor", "-c", cfg)
	if err == nil || !strings.Contains(errOut, path) || !strings.Contains(errOut, "left as it is") {
		t.Errorf("install over a broken config: %v\n%s", err, errOut)
	}
	if now, _ := os.ReadFile(path); string(now) != string(broken) {
		t.Error("a malformed config was overwritten")
	}
	if backups := backupsOf(path); len(backups) != 0 {
		t.Errorf("backups made: %v", backups)
	}
}

func TestImportInstallThenServeAsTheClientWould(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	fixture := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": referenceServer(t, "server-everything", "stdio")[1:]},
		"memory":     map[string]any{"command": "node", "args": referenceServer(t, "server-memory")[1:], "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "m.jsonl")}},
	}}
	b, _ := json.MarshalIndent(fixture, "", "  ")
	env := clients.Env{Home: home, OS: "linux"}
	c, _ := clients.Find(env, "claude-desktop")
	path, _ := c.Path(env, "")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, b, 0o600)
	cfg := filepath.Join(home, ".dynamic-mcp", "config.yaml")
	if _, errOut, err := runBinary(t, home, "import", "claude-desktop", "-o", cfg, "--describe", "everything=The reference server", "--describe", "memory=A memory"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	// Every command finds the config import wrote without -c.
	if out, errOut, err := runBinary(t, home, "validate"); err != nil || !strings.Contains(out, cfg+": OK") {
		t.Errorf("validate with no -c after import: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := runBinary(t, home, "install", "claude-desktop", "-c", cfg); err != nil {
		t.Fatalf("install: %v\n%s", err, errOut)
	}
	var installed struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	data, _ := os.ReadFile(path)
	mustUnmarshal(t, data, &installed)
	entry, ok := installed.MCPServers["dynamic-mcp"]
	if !ok || len(installed.MCPServers) != 1 || !filepath.IsAbs(entry.Command) {
		t.Fatalf("installed entry: %s", data)
	}
	// Imported again, the client's config has only the hub's own entry:
	// it is named and skipped, and the config keeps its two groups.
	before, _ := os.ReadFile(cfg)
	if _, errOut, err := runBinary(t, home, "import", "claude-desktop", "-o", cfg); err == nil || !strings.Contains(errOut, "dynamic-mcp runs dynamic-mcp itself, so it is not imported") {
		t.Errorf("import after install: %v\n%s", err, errOut)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("import after install changed the config:\n%s", after)
	}
	// The imported config keeps the default connect_timeout, 10 s, which
	// a node server exceeded on a loaded machine, every retry again: the
	// test's waits for node servers are added (nodeWaits).
	if strings.Contains(string(before), "\nsettings:") {
		t.Fatalf("import wrote settings; give them nodeWaits:\n%s", before)
	}
	if err := os.WriteFile(cfg, append(before, "\nsettings: { "+nodeWaits+" }\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Start the hub exactly as the client would, and list its tools. The
	// command is the test binary, which runs as the hub when told so.
	hub := startProcess(t, []string{"HOME=" + home, "DYNAMIC_MCP_HOME=" + filepath.Join(home, ".dynamic-mcp"), hubEnvVar + "=1"}, append([]string{entry.Command}, entry.Args...)...)
	hub.initialize("2025-06-18")
	hub.waitGroupsReady("everything", "memory")
	text, _ := toolText(t, hub.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": "memory"}}))
	if !strings.Contains(text, "create_entities") {
		t.Errorf("memory tools through the installed entry: %.200s", text)
	}
}

func TestImportClaudeCodeProjectAndProbe(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	project := filepath.Join(home, "work", "app")
	os.MkdirAll(project, 0o700)
	user := map[string]any{"mcpServers": map[string]any{"global": map[string]any{"command": fakeBin}},
		"projects": map[string]any{project: map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"command": fakeBin, "args": []string{"-name", "proj"}}}}}}
	b, _ := json.Marshal(user)
	os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(fmt.Sprintf(`{"mcpServers": {"shared": {"command": %q}}}`, fakeBin)), 0o600)
	out := filepath.Join(home, "c.yaml")
	if _, errOut, err := runCLI(t, "import", "claude-code", "--project", project, "-o", out, "--probe"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	cfg, _ := os.ReadFile(out)
	// The project's .mcp.json and its entry in ~/.claude.json, not the
	// user's global servers; --probe took each one's instructions.
	if !strings.Contains(string(cfg), "shared:") || !strings.Contains(string(cfg), "proj:") || strings.Contains(string(cfg), "global:") ||
		strings.Count(string(cfg), "description: A fake server for tests.") != 2 {
		t.Errorf("imported:\n%s", cfg)
	}
}

// Without --project, import reads the user's servers of ~/.claude.json
// and names each project there that has servers of its own, with the
// command that imports them.
func TestImportClaudeCodeNamesProjectServers(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	project := filepath.Join(home, "work", "app")
	user := map[string]any{"mcpServers": map[string]any{"global": map[string]any{"command": fakeBin}},
		"projects": map[string]any{project: map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"command": fakeBin}}},
			filepath.Join(home, "bare"): map[string]any{"mcpServers": map[string]any{}}}}
	b, _ := json.Marshal(user)
	os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
	_, errOut, err := runCLI(t, "import", "claude-code", "-o", filepath.Join(home, "c.yaml"))
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "project "+project+" has servers of its own, not imported (proj): dynamic-mcp import claude-code --project "+project) ||
		strings.Contains(errOut, "bare") {
		t.Errorf("import did not name the project's servers:\n%s", errOut)
	}
}

// importAtTerminal runs import of src into out with a terminal (script,
// of util-linux) whose input is typed, and returns what it showed.
func importAtTerminal(t *testing.T, home, src, out, typed string) ([]byte, error) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux) gives the test a terminal: %v", err)
	}
	cmd := exec.Command("script", "-qec", fmt.Sprintf("%s import %s -o %s", hubBin, src, out), "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+home, "DYNAMIC_MCP_HOME="+filepath.Join(home, ".dynamic-mcp"))
	cmd.Stdin = strings.NewReader(typed)
	return cmd.CombinedOutput()
}

func TestImportAsksForDescriptionsOnATerminal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	out := filepath.Join(home, "asked.yaml")
	if b, err := importAtTerminal(t, home, filepath.Join(repoDir, "testdata", "clients", "windsurf.json"), out, "Search the web with Brave\nRead Figma designs\n"); err != nil {
		t.Fatalf("import on a terminal: %v\n%s", err, b)
	}
	cfg, _ := os.ReadFile(out)
	if !strings.Contains(string(cfg), "description: Search the web with Brave") || !strings.Contains(string(cfg), "description: Read Figma designs") {
		t.Errorf("the answers did not become descriptions:\n%s", cfg)
	}
}

// On a terminal, import asks whether to move the literal secrets it
// found into the vault, in the singular for one.
func TestImportAsksToMoveOneSecret(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"gh":{"command":"node","args":["x.js"],"env":{"GITHUB_TOKEN":"ghp_0123456789abcdef"}}}}`), 0o600)
	b, err := importAtTerminal(t, home, src, filepath.Join(home, "config.yaml"), "Read GitHub\nn\n")
	if err != nil || !strings.Contains(string(b), "found 1 secret written literally (GITHUB_TOKEN); move it into the vault? [y/N]") {
		t.Errorf("import of one literal secret on a terminal: %v\n%s", err, b)
	}
}

// A config changed while import waits for an answer at the terminal
// (whether to move the secrets into the vault) keeps the change: import
// merges into the file as it is then, not into the one it read before
// asking, which wrote the change over without a backup of it.
func TestImportKeepsAConfigChangedWhileItAsks(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DYNAMIC_MCP_HOME", home)
	src := filepath.Join(home, "servers.json")
	if err := os.WriteFile(src, []byte(`{"mcpServers":{"gh":{"command":"node","args":["x.js"],"env":{"GITHUB_TOKEN":"ghp_0123456789abcdef"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(out, []byte("groups:\n  mine: {description: mine, command: node, args: [mine.js]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ptm, pts := openPTY(t)
	defer ptm.Close()
	defer pts.Close()
	go io.Copy(io.Discard, ptm) // the terminal's echo
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"import", src, "-o", out, "--describe", "gh=Read GitHub"}, pts, &stdout, stderr)
	}()
	await.Costly(t, 10*time.Second, "the question", func() bool { return strings.Contains(stderr.String(), "move it into the vault? [y/N] ") })
	edited := "groups:\n  mine: {description: mine, command: node, args: [mine.js]}\n  added: {description: added by hand meanwhile, command: node, args: [added.js]}\n"
	if err := os.WriteFile(out, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ptm.WriteString("n\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("import: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	cfg, _ := os.ReadFile(out)
	for _, want := range []string{"added by hand meanwhile", "gh:", "mine:"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("the config after import lacks %q:\n%s", want, cfg)
		}
	}
}

// At a terminal, import's question says what Enter alone does: the
// placeholder description goes in, which validate flags.
func TestImportPromptSaysEnterLeavesATodo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"one":{"command":"node","args":["x.js"]}}}`), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	b, err := importAtTerminal(t, home, src, cfg, "\n")
	if err != nil || !strings.Contains(string(b), "What is one for? (one line the LLM reads; Enter leaves a TODO that validate flags): ") {
		t.Errorf("import on a terminal: %v\n%s", err, b)
	}
	if c, _ := os.ReadFile(cfg); !strings.Contains(string(c), placeholderPrefix) {
		t.Errorf("config after Enter:\n%s", c)
	}
}

// A group that runs dynamic-mcp on its own config is refused, by any
// spelling of the config's path: the hub would be its own client.
func TestConfigServingItselfIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	for _, args := range []string{
		`["serve", "-c", "` + cfg + `"]`,
		`["serve", "--config=` + dir + `/./config.yaml"]`,
	} {
		os.WriteFile(cfg, []byte("groups:\n  me:\n    description: the hub again\n    command: /usr/local/bin/dynamic-mcp\n    args: "+args+"\n"), 0o600)
		_, errOut, err := runCLI(t, "validate", "-c", cfg)
		if err == nil || !strings.Contains(errOut, "group me runs dynamic-mcp on this same config") {
			t.Errorf("validate of %s: %v\n%s", args, err, errOut)
		}
	}
	// Another config is a hub in front of another hub: allowed.
	os.WriteFile(cfg, []byte("groups:\n  team:\n    description: the team's hub\n    command: dynamic-mcp\n    args: [\"serve\", \"-c\", \"/etc/team.yaml\"]\n"), 0o600)
	if _, errOut, err := runCLI(t, "validate", "-c", cfg); err != nil {
		t.Errorf("a hub of another config: %v\n%s", err, errOut)
	}
}

// With stdin not a terminal (/dev/null, as a script or a client has it),
// import asks nothing: the placeholder description goes in, and one
// server is "1 server".
func TestImportWithoutTerminalAsksNothing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"one":{"command":"node","args":["x.js"]}}}`), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	out, errOut, err := runBinary(t, home, "import", src, "-o", cfg)
	if err != nil || strings.Contains(errOut, "What is") || !strings.Contains(out, ": 1 server imported") {
		t.Errorf("import with stdin from /dev/null: %v\n%s%s", err, out, errOut)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), placeholderPrefix) {
		t.Errorf("config:\n%s", b)
	}
}

// A client whose config is not where it keeps it is named with that path
// and the way out (its file by path); one literal secret is "1 secret".
func TestImportSaysWhatToDo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	_, errOut, err := runBinary(t, home, "import", "claude-code")
	if err == nil || !strings.Contains(errOut, "no claude-code config at "+filepath.Join(home, ".claude.json")) ||
		!strings.Contains(errOut, "dynamic-mcp import FILE") || strings.Contains(errOut, "no such file") {
		t.Errorf("import of a client with no config: %v\n%s", err, errOut)
	}
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"gh":{"command":"node","args":["x.js"],"env":{"GITHUB_TOKEN":"ghp_0123456789abcdef"}}}}`), 0o600)
	_, errOut, err = runBinary(t, home, "import", src, "-o", filepath.Join(home, "config.yaml"))
	if err != nil || !strings.Contains(errOut, "note: 1 secret written literally into ") || !strings.Contains(errOut, "(GITHUB_TOKEN of gh);") {
		t.Errorf("import of one literal secret: %v\n%s", err, errOut)
	}
}

// An import that adds nothing (every group there already) writes nothing:
// no backup of the unchanged config, no "the file as it was".
func TestImportOfNothingNewWritesNothing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"one":{"command":"node","args":["x.js"]}}}`), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	if out, errOut, err := runBinary(t, home, "import", src, "-o", cfg); err != nil {
		t.Fatalf("first import: %v\n%s%s", err, out, errOut)
	}
	before, _ := os.ReadFile(cfg)
	out, errOut, err := runBinary(t, home, "import", src, "-o", cfg)
	if err != nil || !strings.Contains(out, "0 servers imported") || strings.Contains(out, "the file as it was") {
		t.Errorf("second import: %v\n%s%s", err, out, errOut)
	}
	backups, _ := os.ReadDir(filepath.Join(home, ".dynamic-mcp", "backups"))
	if len(backups) != 0 {
		t.Errorf("backups of an unchanged config: %d", len(backups))
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("config changed:\n%s", after)
	}
}

// Gemini CLI's excludeTools stay excluded: the group's deny: of their
// exact names (includeTools its allow:), which the hub loads; a key
// import leaves out is a note naming server, key and what to do.
func TestImportKeepsExcludedToolsAndNotesDroppedKeys(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "settings.json")
	os.WriteFile(src, []byte(`{"mcpServers":{"sh":{"command":"node","args":["x.js"],"excludeTools":["run_shell_command"],"includeTools":["read_file","run_shell_command"],"envFile":".env"}}}`), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	out, errOut, err := runBinary(t, home, "import", src, "-o", cfg)
	if err != nil || !strings.Contains(errOut, "note: server sh: envFile not imported: dynamic-mcp reads no env file; copy its variables into env:") {
		t.Errorf("import: %v\n%s%s", err, out, errOut)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `deny: ["^run_shell_command$"]`) || !strings.Contains(string(b), `allow: ["^read_file$", "^run_shell_command$"]`) {
		t.Errorf("config:\n%s", b)
	}
	loaded, err := configs.Load(cfg)
	if err != nil || len(loaded.Groups) != 1 || !loaded.Groups[0].Tools.Hides("run_shell_command") || loaded.Groups[0].Tools.Hides("read_file") || !loaded.Groups[0].Tools.Hides("write_file") {
		t.Errorf("loaded: %v", err)
	}
}

// Codex's bearer_token_env_var and env_http_headers of a url server are
// the group's headers, reading the same variables from the hub's
// environment: the config loads with the headers Codex sent.
func TestImportCodexHeadersFromTheEnvironment(t *testing.T) {
	home := t.TempDir()
	src := filepath.Join(home, "config.toml")
	os.WriteFile(src, []byte("[mcp_servers.api]\nurl = \"https://api.example/mcp\"\nbearer_token_env_var = \"API_TOKEN\"\nenv_http_headers = { \"X-Org\" = \"API_ORG\" }\n"), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	_, errOut, err := runCLI(t, "import", src, "-o", cfg)
	if err != nil || strings.Contains(errOut, "not imported") {
		t.Errorf("import: %v\n%s", err, errOut)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `Authorization: "Bearer ${API_TOKEN}"`) || !strings.Contains(string(b), `X-Org: "${API_ORG}"`) {
		t.Errorf("config:\n%s", b)
	}
	t.Setenv("API_TOKEN", "tok")
	t.Setenv("API_ORG", "org")
	loaded, err := configs.Load(cfg)
	if err != nil || len(loaded.Groups) != 1 {
		t.Fatalf("load: %v", err)
	}
	if h := loaded.Groups[0].Servers[0].Headers; h["Authorization"] != "Bearer tok" || h["X-Org"] != "org" {
		t.Errorf("loaded headers %q", h)
	}
}

// A Codex http_headers value is sent as written (Codex expands nothing
// in it): imported, the hub sends the same bytes, a ${c} and a $x in it
// as text, whatever the hub's environment holds.
func TestImportCodexHeadersAreLiteral(t *testing.T) {
	home := t.TempDir()
	src := filepath.Join(home, "config.toml")
	os.WriteFile(src, []byte("[mcp_servers.api]\nurl = \"https://api.example/mcp\"\nhttp_headers = { \"X-Sig\" = \"a${c}b$x\" }\n"), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	if _, errOut, err := runCLI(t, "import", src, "-o", cfg); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	t.Setenv("c", "from-the-environment")
	loaded, err := configs.Load(cfg)
	if err != nil || len(loaded.Groups) != 1 {
		b, _ := os.ReadFile(cfg)
		t.Fatalf("load: %v\n%s", err, b)
	}
	if h := loaded.Groups[0].Servers[0].Headers; h["X-Sig"] != "a${c}b$x" {
		t.Errorf("loaded header %q, want the bytes Codex sends, a${c}b$x", h["X-Sig"])
	}
}

// A command (stdio) server has no headers in the hub's config: import
// leaves a JSON client's headers of one out with a note naming the
// server, and offers no secret among them to the vault; a url server's
// headers are carried.
func TestImportNotesHeadersOfACommandServer(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "mcp.json")
	os.WriteFile(src, []byte(`{"mcpServers":{
		"sh":{"command":"node","args":["x.js"],"headers":{"Authorization":"Bearer ghp_cmdToken000000000000000"}},
		"api":{"url":"https://api.example/mcp","headers":{"X-Org":"acme"}}}}`), 0o600)
	cfg := filepath.Join(home, "config.yaml")
	out, errOut, err := runBinary(t, home, "import", src, "-o", cfg)
	if err != nil || !strings.Contains(errOut, "note: server sh: headers not imported: a command (stdio) server is sent no headers") ||
		strings.Contains(errOut, "server api: headers") || strings.Contains(errOut, "Authorization") {
		t.Errorf("import: %v\n%s%s", err, out, errOut)
	}
	b, _ := os.ReadFile(cfg)
	if strings.Contains(string(b), "ghp_cmdToken") || strings.Contains(string(b), "Authorization") || !strings.Contains(string(b), `X-Org: "acme"`) {
		t.Errorf("config:\n%s", b)
	}
}
