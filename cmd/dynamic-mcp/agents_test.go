//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// npmAgentsDir is testdata/npm-agents, where the agent clients are
// installed (npm install --prefix testdata/npm-agents).
func npmAgentsDir() string { return filepath.Join(repoDir, "testdata", "npm-agents") }

// agentClient is an agent client from npm that TestAgentClients runs
// non-interactively in front of the model server, with the hub as its
// only MCP server, named hub.
type agentClient struct {
	name string
	bin  string // under node_modules/.bin
	// auto is the mode mode: auto gives the client by the clientInfo it
	// sends (docs/modes.md, "mode: auto").
	auto string
	// command is the client's command line and environment (beside
	// agentEnv's) for one run in home, its own HOME, with the hub
	// started as hub with hubEnv, and the model at modelURL.
	command func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) (args, env []string)
}

// agentEnv is the environment of every client run: no variable of
// whoever runs the tests (a real API key, a proxy) reaches a client. The
// tests' node compile cache (testNode) does: Gemini CLI's bundle, some
// 70 MB of JavaScript, took 3.3 s of CPU to print its version with the
// cache warm against 4.1 without (three rounds interleaved, load 17).
func agentEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"NODE_COMPILE_CACHE=" + os.Getenv("NODE_COMPILE_CACHE")}
}

// agentHubEnv is the environment a client gives the hub (its server's
// env) on the state dir state: the tests' PATH and node compile cache
// too, for the everything server the hub starts, since a client may give
// its server little of its own (Codex passes a few variables, Gemini CLI
// drops those that look secret).
func agentHubEnv(state string) map[string]string {
	return map[string]string{"DYNAMIC_MCP_HOME": state, "PATH": os.Getenv("PATH"), "NODE_COMPILE_CACHE": os.Getenv("NODE_COMPILE_CACHE")}
}

var agentClients = []agentClient{claudeCode, geminiCLI, codex}

// claudeCode is Claude Code (claude -p), its MCP servers given on the
// command line and no other (--strict-mcp-config), the model at
// ANTHROPIC_BASE_URL; the hub's tools are allowed without a question
// (--allowedTools mcp__hub).
var claudeCode = agentClient{
	name: "claude",
	bin:  "claude",
	auto: "flat", // claude-code 2.1.332
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
			// Its waits for the hub to start and for a call (30 s and
			// more by default): as long as the tests' clients'.
			fmt.Sprint("MCP_TIMEOUT=", clientTimeout.Milliseconds()), fmt.Sprint("MCP_TOOL_TIMEOUT=", clientTimeout.Milliseconds()),
		}
		return args, env
	},
}

// geminiCLI is Gemini CLI (gemini -p), its one MCP server in the
// settings.json of its HOME, trusted so that its tools run without a
// question, the model at GOOGLE_GEMINI_BASE_URL with an API key.
var geminiCLI = agentClient{
	name: "gemini",
	bin:  "gemini",
	auto: "dynamic", // gemini-cli-mcp-client
	command: func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) ([]string, []string) {
		settings, _ := json.MarshalIndent(map[string]any{
			"mcpServers": map[string]any{
				// timeout: a request's, as long as the tests' clients'.
				"hub": map[string]any{"command": hub[0], "args": hub[1:], "env": hubEnv, "trust": true, "timeout": clientTimeout.Milliseconds()},
			},
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
			"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
		}, "", "  ")
		writeAgentFile(t, filepath.Join(home, ".gemini", "settings.json"), settings)
		args := []string{"-p", prompt, "--model", "gemini-2.5-flash", "--allowed-mcp-server-names", "hub"}
		env := []string{
			"GOOGLE_GEMINI_BASE_URL=" + modelURL, "GEMINI_API_KEY=test-dummy-key",
			// No question about trusting the folder, and no second node
			// process with a larger heap.
			"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true",
		}
		return args, env
	},
}

// codex is Codex (codex exec), its one MCP server and a model provider
// at the model server (the Responses API) in the config.toml of its
// CODEX_HOME, with an API key from the environment. Its first turn waits
// for the hub's start as install has it wait (clients.CodexStartupGrace):
// at Codex's default, a second, the turn left out the hub's tools
// whenever the hub had not listed them by then ("omitting pending
// optional MCP server"), a server it never ran in flat mode every time
// at load 30.
var codex = agentClient{
	name: "codex",
	bin:  "codex",
	auto: "dynamic", // codex-mcp-client
	command: func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) ([]string, []string) {
		var env []string
		for k, v := range hubEnv {
			env = append(env, k+" = "+tomlString(v))
		}
		var args []string
		for _, a := range hub[1:] {
			args = append(args, tomlString(a))
		}
		config := fmt.Sprintf(clients.CodexStartupGrace+`
model = "gpt-5-script"
model_provider = "script"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.script]
name = "script"
base_url = %s
wire_api = "responses"
env_key = "SCRIPT_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.hub]
command = %s
args = [%s]
env = { %s }
startup_timeout_sec = %[5]d
tool_timeout_sec = %[5]d
default_tools_approval_mode = "approve"
`, tomlString(modelURL+"/v1"), tomlString(hub[0]), strings.Join(args, ", "), strings.Join(env, ", "), int(clientTimeout.Seconds()))
		codexHome := filepath.Join(home, ".codex")
		writeAgentFile(t, filepath.Join(codexHome, "config.toml"), []byte(config))
		return []string{"exec", "--skip-git-repo-check", "--sandbox", "read-only", prompt},
			[]string{"CODEX_HOME=" + codexHome, "SCRIPT_API_KEY=test-dummy-key"}
	},
}

// agentsConfig is a hub config in mode with the everything server as
// its one group, everything. Each client waits clientTimeout for the hub
// and checks its first list: the hub's waits are firstListWaits.
func agentsConfig(t testing.TB, mode string) string {
	return fmt.Sprintf(`
mode: %s
settings: { stop_grace: 1s, `+firstListWaits+` }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
`, mode, yamlList(referenceServer(t, "server-everything", "stdio")[1:]))
}

// How a run finds the hub (agentRun.start).
const (
	// startFirst: a hub of its own that never ran this config (an
	// empty state dir), its upstream starting with it.
	startFirst = "first"
	// startCold: a hub of its own, its upstream starting with it, on a
	// state dir a hub of this config ran with before, up to its
	// upstream's list of tools.
	startCold = "cold"
	// startWarm: the shared hub of this config, already running with
	// its upstream up; the client's entry is a bridge to it.
	startWarm = "warm"
)

// agentSlots bounds the client runs at once: each is a client, a hub
// and a node server, and the package's other tests need their share of a
// small machine. A run mostly waits (for its processes to start, for the
// hub and the model server): four runs of mode: auto used 14 s of CPU in
// all, each run taking 7-37 s at load 33, so that a third slot keeps the
// runs, the package's long pole, from leaving the cores idle.
var agentSlots = make(chan struct{}, 3)

// agentChain is the runs of one client in one mode, in order on one
// state dir.
type agentChain struct {
	client agentClient
	mode   string
	starts []string
}

// agentChains are the runs of TestAgentClients: each client's first
// start in each mode, its cold start in flat mode and its warm start in
// the mode auto gives it. Each run costs a start of the client's CLI (a
// Gemini CLI start some 4 s of CPU), and a run that takes no hub path
// another run does not proves nothing more, so that the runs are
// those where the hub's paths differ, not every start in every mode:
//
//   - first, in both modes: a flat client's handshake waits for its
//     upstream's tools, which are unknown (upstream.Server.LastTools), and
//     a dynamic one lists the groups at once and waits in
//     get_dynamic_tools. The first run in the mode auto gives the client
//     runs in mode: auto, so that the hub must find the mode by the
//     clientInfo the client sends (the other mode's first run is the
//     config's mode as written).
//   - cold, in flat mode only: a flat list is answered at once from the
//     tools of the last run (view.listsOf); a dynamic view shows the
//     groups alone until they are ready, as on a first start, so that a
//     dynamic cold start is a first start over again.
//   - warm, in one mode: the client's hub is a bridge, which passes the
//     client's pipes to the shared hub whatever its mode (bridge.go), and
//     the shared hub serves them as any client. Each client's, since each
//     starts its server's process (and its pipes) its own way; in the mode
//     auto gives it, so that both modes are among the warm runs
//     (TestAgentClients checks that they are).
func agentChains() []agentChain {
	var chains []agentChain
	for _, client := range agentClients {
		for _, mode := range []string{"dynamic", "flat"} {
			chain := agentChain{client: client, mode: mode, starts: []string{startFirst}}
			if mode == "flat" {
				chain.starts = append(chain.starts, startCold)
			}
			if mode == client.auto {
				chain.starts = append(chain.starts, startWarm)
			}
			chains = append(chains, chain)
		}
	}
	return chains
}

// TestAgentClients runs each agent client with the hub as its only MCP
// server, in dynamic and flat mode, in front of the model server, whose
// script has the model find the everything server's echo tool through
// the hub and call it: the client must offer the model the hub's tools
// in its first request, pass the calls to the hub and their results back
// to the model, and print the model's last answer. Each client runs on
// first, cold and warm starts (agentChains), its first in the mode auto
// gives it in mode: auto: Claude Code 2.1.332 must offer the model the
// hub's tools flat and Gemini CLI and Codex the two meta-tools, each by
// the clientInfo it sends the hub (Claude Code with its tool search off,
// which the hub cannot see: its clientInfo alone decides).
func TestAgentClients(t *testing.T) {
	t.Parallel()
	chains := agentChains()
	warm := map[string]bool{}
	var names []string
	for _, chain := range chains {
		names = append(names, chain.client.name+"/"+chain.mode)
		if slices.Contains(chain.starts, startWarm) {
			warm[chain.mode] = true
		}
	}
	if !warm["dynamic"] || !warm["flat"] {
		t.Errorf("the warm runs are in modes %v, want both: give one of them the other mode (agentChains)", warm)
	}
	concurrently(t, names, func(t *testing.T, name string) {
		chain := chains[slices.Index(names, name)]
		bin := agentBinary(t, chain.client)
		agentSlots <- struct{}{}
		defer func() { <-agentSlots }()
		state := t.TempDir()
		shared := newSharedIn(t, state, agentsConfig(t, chain.mode))
		for _, start := range chain.starts {
			run := agentRun{client: chain.client, bin: bin, mode: chain.mode, start: start, shared: shared, state: state}
			name := start
			if start == startFirst && chain.mode == chain.client.auto {
				run.mode, name = "auto", start+"-auto"
			}
			t.Run(name, func(t *testing.T) {
				if run.mode == "auto" {
					run.shared = newSharedIn(t, state, agentsConfig(t, "auto"))
				}
				runAgent(t, run)
			})
		}
	})
}

// TestAgentClientsModeAuto runs Claude Code, its turn scripted as in
// TestAgentClients, in front of a hub in mode: auto that it starts, with
// its tool search on, its default (the case auto is for): its first
// request names the hub's tools, flat, among the tools it defers, and the
// model answers at once. (Each client's run in mode: auto with its tool
// search off is TestAgentClients'.)
func TestAgentClientsModeAuto(t *testing.T) {
	t.Parallel()
	run := autoRun(t, claudeCode)
	run.client.command = func(t *testing.T, home string, hub []string, hubEnv map[string]string, modelURL, prompt string) ([]string, []string) {
		args, env := claudeCode.command(t, home, hub, hubEnv, modelURL, prompt)
		return args, slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ENABLE_TOOL_SEARCH=") })
	}
	script := modelScript{group: "everything", message: "hello from claude", flat: true}
	requests, out := runClient(t, run, script, agentHubEnv(run.state))
	turns := turns(requests)
	if len(turns) == 0 {
		t.Fatalf("claude made no request of the model with tools; its output:\n%s", out)
	}
	deferred := turns[0].Deferred
	t.Logf("claude deferred %d tools behind its ToolSearch: %v", len(deferred), deferred)
	if !slices.Contains(deferred, "mcp__hub__everything__echo") || slices.ContainsFunc(deferred, func(name string) bool { return strings.Contains(name, "dynamic_tool") }) {
		t.Errorf("claude's first request to the model deferred %v, want the hub's tools flat (mcp__hub__everything__echo) and no meta-tool", deferred)
	}
}

// autoRun is the first run of client (on its own hub) in mode: auto,
// holding one of agentSlots until the test ends.
func autoRun(t *testing.T, client agentClient) agentRun {
	bin := agentBinary(t, client)
	agentSlots <- struct{}{}
	t.Cleanup(func() { <-agentSlots })
	state := t.TempDir()
	shared := newSharedIn(t, state, agentsConfig(t, "auto"))
	return agentRun{client: client, bin: bin, mode: "auto", start: startFirst, shared: shared, state: state}
}

// agentBinary is client's command, installed by npm install --prefix
// testdata/npm-agents; outside CI (CI unset) a test without it is
// skipped.
func agentBinary(t *testing.T, client agentClient) string {
	bin := filepath.Join(npmAgentsDir(), "node_modules", ".bin", client.bin)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (run: npm install --prefix testdata/npm-agents): %v", client.name, err)
		}
		t.Skipf("%s is not installed (run: npm install --prefix testdata/npm-agents): %v", client.name, err)
	}
	return bin
}

// agentRun is one run of a client.
type agentRun struct {
	client agentClient
	bin    string // the client's command
	mode   string // the hub's mode; auto: the client's (agentClient.auto)
	start  string // startFirst, startCold or startWarm
	// shared is the hub's config, with state as its state_dir, and
	// what a bridge to its shared hub needs.
	shared *sharedSetup
	state  string
}

// runAgent runs a client and checks what its model saw.
func runAgent(t *testing.T, run agentRun) {
	client := run.client
	if run.mode == "auto" {
		run.mode = client.auto
	}
	script := modelScript{group: "everything", message: "hello from " + client.name, flat: run.mode == "flat"}
	hubEnv := agentHubEnv(run.state)
	switch run.start {
	case startCold:
		// The first run may have ended before the hub heard its
		// upstream's tools (a client that gave up on them at once): then
		// a hub of the test's own runs until it has. The hub keeps the
		// last tools/list of each server in its state dir's tools/, and
		// a file there is that list heard.
		if kept, _ := filepath.Glob(filepath.Join(run.state, "tools", "*.json")); len(kept) == 0 {
			c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + run.state}, hubBin, "serve", "-c", run.shared.path)
			c.initialize("2025-06-18")
			waitEverythingUp(t, c, run.mode)
			c.tr.Close()
		}
	case startWarm:
		// A bridge of the test's own starts the shared hub and stays
		// until the test ends.
		waitEverythingUp(t, run.shared.bridge(t, "warm-up"), run.mode)
		for _, kv := range run.shared.env {
			k, v, _ := strings.Cut(kv, "=")
			hubEnv[k] = v
		}
	}
	requests, out := runClient(t, run, script, hubEnv)
	if run.start == startWarm {
		// The warm-up's bridge and the client's: the client's joined the
		// hub that was warm, and started none of its own.
		paths, _ := local.PathsFor(run.shared.path, run.state)
		b, _ := os.ReadFile(paths.Log)
		if n := strings.Count(string(b), `"msg":"client connected"`); n != 2 {
			t.Errorf("the shared hub saw %d clients connect, want 2 (the warm-up and %s); its log:\n%s", n, client.name, b)
		}
	}
	if !checkModelSaw(t, script, requests) || !strings.Contains(out, script.finalAnswer()) {
		t.Errorf("%s did not get through the script to the model's answer %q; its output:\n%s", client.name, script.finalAnswer(), out)
	}
}

// runClient runs the client once, with the hub started with hubEnv, in
// front of a model server playing script, and returns the requests the
// model server saw and the client's output.
func runClient(t *testing.T, run agentRun, script modelScript, hubEnv map[string]string) ([]modelRequest, string) {
	model := startModelServer(t, script)
	home := t.TempDir()
	hub := []string{hubBin, "serve", "-c", run.shared.path}
	args, env := run.client.command(t, home, hub, hubEnv, model.URL, "Use the hub to echo a message.")
	ctx, cancel := untilHung(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, run.bin, args...)
	cmd.Dir = home
	cmd.Env = append(agentEnv(home), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The hub is the client's child and may hold the output open a
	// moment after the client exits.
	cmd.WaitDelay = 10 * time.Second
	began := time.Now()
	err := cmd.Run()
	t.Logf("%s ran %v", run.client.name, time.Since(began).Round(time.Millisecond))
	if err != nil {
		t.Errorf("%s: %v", run.client.name, err)
	}
	return model.Requests(), out.String()
}

// waitEverythingUp waits until the hub c is a client of, in mode, has
// its upstream up: it answers the everything group's tools.
func waitEverythingUp(t *testing.T, c *client, mode string) {
	t.Helper()
	await.Costly(t, 60*time.Second, "the shared hub's everything group up", func() bool {
		if mode == "flat" {
			return strings.Contains(string(c.call("tools/list", nil)), `"everything__echo"`)
		}
		res := c.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": "everything"}})
		return strings.Contains(string(res), "Echoes back the input string")
	})
}

// turns is the requests that offered the model tools: those of the
// client's turn, not those a client makes beside it.
func turns(requests []modelRequest) []modelRequest {
	var out []modelRequest
	for _, r := range requests {
		if len(r.Tools) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// checkModelSaw checks the requests a client made of the model in one
// run of script: its first request with tools offered the hub's tools,
// and its last carried each tool result the script asked for: the
// group's tools (with echo's definition) from get_dynamic_tools and
// echo's answer. It logs the bytes of tool definitions each request
// sent, the hub's among them (issue 35 asks for these figures).
func checkModelSaw(t *testing.T, script modelScript, requests []modelRequest) bool {
	t.Helper()
	turns := turns(requests)
	if len(turns) == 0 {
		t.Errorf("the client made no request of the model with tools (%d requests)", len(requests))
		return false
	}
	first, last := turns[0], turns[len(turns)-1]
	hubTools, hubBytes := 0, 0
	var names []string
	for _, tool := range first.Tools {
		names = append(names, tool.Name)
		if strings.Contains(tool.Name, "dynamic_tool") || strings.Contains(tool.Name, script.group+"__") {
			hubTools++
			hubBytes += tool.Bytes
		}
	}
	t.Logf("tool definitions sent to the model: %d bytes a request (%d tools), the hub's %d bytes (%d tools); %d requests",
		first.ToolBytes, len(first.Tools), hubBytes, hubTools, len(turns))
	ok := true
	want, results := []string{"get_dynamic_tools", "call_dynamic_tool"}, []string{"Echoes back the input string", "Echo: " + script.message}
	if script.flat {
		want, results = []string{script.group + "__echo"}, results[1:]
	}
	for _, name := range want {
		if _, found := findTool(first.Tools, name); !found {
			t.Errorf("the client's first request to the model offered no tool %s of the hub; it offered %v", name, names)
			ok = false
		}
	}
	// The other mode's tools are not offered: no meta-tool in flat mode,
	// no tool of the group in dynamic mode (agentsConfig exposes none).
	mode, other := "dynamic", script.group+"__"
	if script.flat {
		mode, other = "flat", "dynamic_tool"
	}
	for _, name := range names {
		if strings.Contains(name, other) {
			t.Errorf("the client's first request to the model offered %s in %s mode: %v", name, mode, names)
			ok = false
		}
	}
	if len(last.Results) != len(results) {
		t.Errorf("the client's last request carried %d tool results, want %d: %q", len(last.Results), len(results), last.Results)
		return false
	}
	for i, text := range results {
		if !strings.Contains(last.Results[i], text) {
			t.Errorf("tool result %d the client passed to the model lacks %q: %.2000s", i, text, last.Results[i])
			ok = false
		}
	}
	return ok
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeAgentFile writes data to path, making its directory.
func writeAgentFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
