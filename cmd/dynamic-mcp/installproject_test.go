package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// projectHome is a home whose ~/.claude.json has a server of the user's
// and one in the local scope of a project, a git work tree whose
// committed .mcp.json has one more, and a hub config serving both of the
// project's. It returns the project and the hub config.
func projectHome(t *testing.T) (project, cfg string) {
	t.Helper()
	home := t.TempDir()
	withHome(t, home)
	project = filepath.Join(home, "work", "app")
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	claudeJSON := fmt.Sprintf("{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"mine\": {\"command\": %q}\n  },\n  \"projects\": {\n    %q: {\n      \"allowedTools\": [],\n      \"mcpServers\": {\n        \"proj\": {\"command\": %q, \"args\": [\"-name\", \"proj\"]}\n      }\n    }\n  }\n}\n", fakeBin, project, fakeBin)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claudeJSON), 0o600)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte("{\n  \"mcpServers\": {\n    \"shared\": {\"command\": \"npx\", \"args\": [\"-y\", \"shared-server\"]}\n  }\n}\n"), 0o644)
	cfg = filepath.Join(home, "hub.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  proj: { description: fake, command: %q }\n  shared: { description: fake, command: %q }\n", fakeBin, fakeBin)), 0o600)
	return project, cfg
}

// snapshot is the bytes of each file, "" for one that is not there.
func snapshot(paths ...string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		m[p] = string(b)
	}
	return m
}

func sameFiles(t *testing.T, when string, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if got, _ := os.ReadFile(p); string(got) != w {
			t.Errorf("%s: %s is:\n%s\nwant:\n%s", when, p, got, w)
		}
	}
}

// install claude-code --project keeps the project's committed .mcp.json
// as it is (no absolute path of this machine goes into it) and serves the
// project from the user's local scope: the local-scope servers the hub
// serves are replaced by its one entry, the .mcp.json servers turned off
// in the project's local settings, and no backup is left in the project.
// uninstall undoes all of it, byte for byte.
func TestInstallProjectClaudeCodeUsesTheLocalScope(t *testing.T) {
	project, cfg := projectHome(t)
	home := os.Getenv("HOME")
	claudeJSON := filepath.Join(home, ".claude.json")
	mcpJSON := filepath.Join(project, ".mcp.json")
	settings := filepath.Join(project, ".claude", "settings.local.json")
	before := snapshot(claudeJSON, mcpJSON, settings)

	out, errOut, err := runCLI(t, "install", "claude-code", "--project", project, "-c", cfg, "--force")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, settings) || !strings.Contains(out, "shared") {
		t.Errorf("install says:\n%s", out)
	}
	sameFiles(t, "after install", map[string]string{mcpJSON: before[mcpJSON]})
	after, _ := os.ReadFile(claudeJSON)
	local, _, _ := clients.ReadAt(after, "projects", project, "mcpServers")
	user, _, _ := clients.ReadAt(after, "mcpServers")
	if len(local) != 1 || local[0].Name != installName || !strings.Contains(strings.Join(local[0].Args, " "), cfg) {
		t.Errorf("local scope: %+v\n%s", local, after)
	}
	if len(user) != 1 || user[0].Name != "mine" {
		t.Errorf("the user's own scope changed: %+v", user)
	}
	if b, _ := os.ReadFile(settings); !strings.Contains(string(b), `"disabledMcpjsonServers": [`) || !strings.Contains(string(b), `"shared"`) {
		t.Errorf("local settings:\n%s", b)
	}
	filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), "backup") {
			t.Errorf("a backup in the project: %s", p)
		}
		return nil
	})

	// Again over itself, then undone: every file as it was.
	if _, errOut, err := runCLI(t, "install", "claude-code", "--project", project, "-c", cfg, "--force"); err != nil {
		t.Fatalf("install again: %v\n%s", err, errOut)
	}
	if out, errOut, err := runCLI(t, "uninstall", "claude-code", "--project", project); err != nil {
		t.Fatalf("uninstall: %v\n%s%s", err, out, errOut)
	}
	sameFiles(t, "after uninstall", before)
	if _, err := os.Stat(filepath.Dir(settings)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("install's .claude directory stayed: %v", err)
	}

	// Claude Code rewrites ~/.claude.json as it runs: uninstall then puts
	// the local-scope servers back into the file as it is now.
	if _, errOut, err := runCLI(t, "install", "claude-code", "--project", project, "-c", cfg, "--force"); err != nil {
		t.Fatalf("install: %v\n%s", err, errOut)
	}
	now, _ := os.ReadFile(claudeJSON)
	os.WriteFile(claudeJSON, []byte(strings.Replace(string(now), `"numStartups": 3`, `"numStartups": 4`, 1)), 0o600)
	if out, errOut, err := runCLI(t, "uninstall", "claude-code", "--project", project); err != nil {
		t.Fatalf("uninstall: %v\n%s%s", err, out, errOut)
	}
	now, _ = os.ReadFile(claudeJSON)
	local, _, _ = clients.ReadAt(now, "projects", project, "mcpServers")
	if !strings.Contains(string(now), `"numStartups": 4`) || len(local) != 1 || local[0].Name != "proj" {
		t.Errorf("after Claude Code wrote the file, uninstall left:\n%s", now)
	}
	sameFiles(t, "after the second uninstall", map[string]string{mcpJSON: before[mcpJSON], settings: ""})
}

// An install into the local scope stopped at any of its writes is undone
// by uninstall, every file byte for byte, with the project's own local
// settings there before.
func TestInstallProjectInterruptedAtEachStep(t *testing.T) {
	for _, step := range []string{stepBackup, stepPending, stepConfig, stepSettings, stepRecord} {
		t.Run(step, func(t *testing.T) {
			project, cfg := projectHome(t)
			files := []string{filepath.Join(os.Getenv("HOME"), ".claude.json"), filepath.Join(project, ".mcp.json"), filepath.Join(project, ".claude", "settings.local.json")}
			os.MkdirAll(filepath.Join(project, ".claude"), 0o700)
			os.WriteFile(files[2], []byte("{\n  \"disabledMcpjsonServers\": [\"old\"], // mine\n  \"permissions\": {}\n}\n"), 0o644)
			before := snapshot(files...)
			installStep = func(s string) error {
				if s == step {
					return errors.New("killed")
				}
				return nil
			}
			t.Cleanup(func() { installStep = func(string) error { return nil } })
			_, _, err := runCLI(t, "install", "claude-code", "--project", project, "-c", cfg, "--force")
			installStep = func(string) error { return nil }
			if err == nil {
				t.Fatal("install did not fail at its step")
			}
			out, errOut, err := runCLI(t, "uninstall", "claude-code", "--project", project)
			if err != nil && step != stepBackup && step != stepPending {
				t.Errorf("uninstall: %v\n%s%s", err, out, errOut)
			}
			sameFiles(t, "after uninstall", before)
		})
	}
}

// Other clients' project configs inside a git work tree are refused: the
// entry's absolute paths would be committed. --force-project writes it
// anyway, and uninstall undoes that.
func TestInstallProjectInAGitWorkTreeIsRefused(t *testing.T) {
	project, cfg := projectHome(t)
	sub := filepath.Join(project, "sub")
	os.MkdirAll(sub, 0o700)
	cursor := filepath.Join(sub, ".cursor", "mcp.json")
	_, errOut, err := runCLI(t, "install", "cursor", "--project", sub, "-c", cfg, "--force")
	if err == nil || !strings.Contains(errOut, "git work tree "+project) || !strings.Contains(errOut, "--force-project") ||
		!strings.Contains(errOut, "dynamic-mcp install cursor\n") {
		t.Errorf("install into a work tree: %v\n%s", err, errOut)
	}
	if _, err := os.Stat(cursor); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("written all the same: %v", err)
	}
	if _, errOut, err := runCLI(t, "install", "cursor", "--project", sub, "-c", cfg, "--force-project", "--force"); err != nil {
		t.Fatalf("install --force-project: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(cursor); !strings.Contains(string(b), cfg) {
		t.Errorf("written:\n%s", b)
	}
	if _, errOut, err := runCLI(t, "uninstall", "cursor", "--project", sub); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, errOut)
	}
	if _, err := os.Stat(cursor); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("uninstall left %s: %v", cursor, err)
	}
	// Claude Code's .mcp.json, with --force-project, as before.
	mcpJSON := filepath.Join(project, ".mcp.json")
	before, _ := os.ReadFile(mcpJSON)
	if _, errOut, err := runCLI(t, "install", "claude-code", "--project", project, "-c", cfg, "--force-project", "--force"); err != nil {
		t.Fatalf("install claude-code --force-project: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(mcpJSON); !strings.Contains(string(b), cfg) {
		t.Errorf(".mcp.json:\n%s", b)
	}
	if _, errOut, err := runCLI(t, "uninstall", "claude-code", "--project", project); err != nil {
		t.Fatalf("uninstall claude-code: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(mcpJSON); string(b) != string(before) {
		t.Errorf(".mcp.json after uninstall:\n%s", b)
	}
}
