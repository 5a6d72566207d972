package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// npmAgentsDir is testdata/npm-agents, where the agent clients are
// installed (npm ci --prefix testdata/npm-agents).
func npmAgentsDir() string { return filepath.Join(repoDir, "testdata", "npm-agents") }

// agentClient is an agent client from npm that agentsTest runs
// non-interactively in front of the model server, with the hub as its
// only MCP server, named hub.
type agentClient struct {
	name string
	bin  string // under node_modules/.bin
	// command is the client's command line and environment (beside
	// agentEnv's) for one run in home, its own HOME, with the hub
	// started as hub with hubEnv, and the model at modelURL.
	command func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) (args, env []string)
}

// agentEnv is the environment of every client run: no variable of
// whoever runs the tests (a real API key, a proxy) reaches a client.
func agentEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1"}
}

var agentClients = []agentClient{claudeCode}

// claudeCode is Claude Code (claude -p), its MCP servers given on the
// command line and no other (--strict-mcp-config), the model at
// ANTHROPIC_BASE_URL; the hub's tools are allowed without a question
// (--allowedTools mcp__hub).
var claudeCode = agentClient{
	name: "claude",
	bin:  "claude",
	command: func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) ([]string, []string) {
		servers, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"hub": map[string]any{"type": "stdio", "command": hub[0], "args": hub[1:], "env": hubEnv},
		}})
		args := []string{"-p", prompt, "--mcp-config", string(servers), "--strict-mcp-config",
			"--allowedTools", "mcp__hub", "--output-format", "text", "--model", "sonnet"}
		env := []string{
			"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=sk-ant-test-dummy",
			"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
			// Claude Code 2.1 defers MCP tools behind its ToolSearch
			// tool; off, it offers the hub's tools to the model up front,
			// as a client without tool search does.
			"ENABLE_TOOL_SEARCH=false",
		}
		return args, env
	},
}

// agentsConfig is a hub config in mode with the everything server as
// its one group, everything.
func agentsConfig(t testing.TB, mode string) string {
	return fmt.Sprintf(`
mode: %s
settings: { stop_grace: 1s, startup_wait: 30s, connect_timeout: 30s }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
`, mode, yamlList(referenceServer(t, "server-everything", "stdio")[1:]))
}

// TestAgentClients runs each agent client with the hub as its only MCP
// server, in dynamic and flat mode, in front of the model server, whose
// script has the model find the everything server's echo tool through
// the hub and call it: the client must offer the model the hub's tools,
// pass the call to the hub and the echo back to the model, and print the
// model's last answer.
func TestAgentClients(t *testing.T) {
	t.Parallel()
	for _, client := range agentClients {
		for _, mode := range []string{"dynamic", "flat"} {
			t.Run(client.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				runAgent(t, client, mode)
			})
		}
	}
}

func runAgent(t *testing.T, client agentClient, mode string) {
	bin := filepath.Join(npmAgentsDir(), "node_modules", ".bin", client.bin)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (run: npm ci --prefix testdata/npm-agents): %v", client.name, err)
		}
		t.Skipf("%s is not installed (run: npm ci --prefix testdata/npm-agents): %v", client.name, err)
	}
	script := modelScript{group: "everything", message: "hello from " + client.name, flat: mode == "flat"}
	model := startModelServer(t, script)
	home := t.TempDir()
	hub := []string{hubBin, "serve", "-c", writeConfig(t, agentsConfig(t, mode))}
	hubEnv := map[string]string{"DYNAMIC_MCP_HOME": filepath.Join(home, "dynamic-mcp"), "PATH": os.Getenv("PATH")}
	prompt := "Use the hub to echo a message."
	args, env := client.command(t, home, hub, hubEnv, model.URL, prompt)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = home
	cmd.Env = append(agentEnv(home), env...)
	cmd.Stdin = nil
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The hub is the client's child and holds the output open a moment
	// after the client exits.
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s ran %v", client.name, time.Since(start).Round(time.Millisecond))
	requests := model.Requests()
	for i, r := range requests {
		t.Logf("request %d %s: %d tools (%d bytes) %v, %d results", i, r.Path, len(r.Tools), r.ToolBytes, r.Tools, len(r.Results))
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("%s: %v\n%s", client.name, err, out.String())
	}
	if err != nil {
		t.Errorf("%s exited: %v", client.name, err)
	}
	if !strings.Contains(out.String(), script.finalAnswer()) {
		t.Errorf("%s did not print the model's answer %q; its output:\n%s", client.name, script.finalAnswer(), out.String())
	}
	_ = requests
}
