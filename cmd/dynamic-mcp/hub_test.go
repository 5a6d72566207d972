package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// initialize and tools/list are answered while an upstream still starts:
// the slow one answers initialize only once the test opens its gate,
// after both answers came (no time is compared: on a loaded machine they
// took 2.5 s, longer than a timed start of the slow one).
func TestSlowUpstreamDoesNotDelayInitializeOrToolsList(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	c := startHub(t, fmt.Sprintf(`
groups:
  quick: { description: Answers at once, command: %q }
  slow:
    description: Starts late
    command: %q
    args: ["-gate", %q]
`, fakeBin, fakeBin, gate))
	c.initialize("2025-06-18")
	list := string(c.call("tools/list", nil))
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first list already names the slow group, in the description and
	// the enum, as it will be once up: the client need not list again.
	if !strings.Contains(list, "- slow: Starts late") || !strings.Contains(list, `"enum":["quick","slow"]`) || strings.Contains(list, "unavailable") {
		t.Errorf("first list does not show the slow group as usable: %s", list)
	}
	c.waitGroupsReady("quick", "slow")
	if again := string(c.call("tools/list", nil)); again != list {
		t.Errorf("the list changed when the group came up:\n%s\nthen\n%s", list, again)
	}
	if c.notified("notifications/tools/list_changed") {
		t.Error("told of a change to a list that did not change")
	}
}

func TestFiftySlowCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	raceHub(t) // fifty calls at once on one stdio session
	c := startHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	const calls, each = 50, time.Second
	start := time.Now()
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			text, _ := toolText(t, c.call("tools/call", map[string]any{"name": "f__sleep", "arguments": map[string]any{"ms": each.Milliseconds(), "text": strconv.Itoa(i)}}))
			if text != "slept 1000" {
				t.Errorf("call %d: %q", i, text)
			}
		})
	}
	wg.Wait()
	// In series they would take 50 s; in flight together, about one.
	if took := time.Since(start); took > calls*each/2 { // well short of in series, however busy the machine
		t.Fatalf("%d calls of %s each took %s: they did not run concurrently", calls, each, took)
	}
}

func TestUpstreamCrashFailsTheCallWithItsReason(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  f: { description: fake, command: %q }
  g: { description: another, command: %q, args: ["-name", "g"] }
`, fakeBin, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(2 * fakeTools)
	text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "f__crash", "arguments": map[string]any{}}))
	if !isErr || !strings.Contains(text, "upstream f exited (status 3): fake: about to crash") {
		t.Fatalf("crash answered %q (isError %v)", text, isErr)
	}
	// The hub stays up, the other group keeps working, and the crashed one
	// stays listed while it reconnects: a call to it waits for the new
	// child (up to startup_wait), never "not found".
	if text, _ := toolText(t, c.call("tools/call", map[string]any{"name": "g__echo", "arguments": map[string]any{"text": "still here"}})); text != "still here" {
		t.Fatalf("other group: %q", text)
	}
	await.Costly(t, 30*time.Second, "the crashed group back", func() bool {
		text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "back"}}))
		if strings.Contains(text, "Tool not found") {
			t.Fatalf("a reconnecting group's tool answered %q", text)
		}
		return !isErr && text == "back"
	})
}

func TestFlatNameCollisionsAreReportedNotShadowed(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  first:  { description: one, prefix: false, command: %q }
  second: { description: two, prefix: false, command: %q, args: ["-name", "second"] }
  third:  { description: three, command: %q }
`, fakeBin, fakeBin, fakeBin))
	c.initialize("2025-06-18")
	tools := c.waitFlatTools(2 * fakeTools)
	names := map[string]int{}
	for _, raw := range tools {
		names[toolName(t, raw)]++
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("tool %s listed %d times", name, n)
		}
	}
	if names["echo"] != 1 || names["third__echo"] != 1 {
		t.Errorf("want echo (first group) and third__echo, got %v", names)
	}
	await.Costly(t, 5*time.Second, "collision in the log", func() bool {
		return strings.Contains(c.stderr.String(), `tool \"echo\" of second is hidden: its name collides with a tool of first`)
	})
}

func TestMultiServerGroupsAggregateAllPagesInConfigOrder(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
settings: { page_size: 4 }
groups:
  pair:
    description: Two servers
    servers:
      a: %s
      b: %s
  solo: { description: One server, command: %q, args: ["-name", "solo", "-page", "1"] }
`, fakeServer("-name", "a", "-prefix"), fakeServer("-name", "b", "-prefix"), fakeBin))
	c.initialize("2025-06-18")
	tools := c.waitFlatTools(3 * fakeTools)
	if len(tools) != 3*fakeTools {
		t.Fatalf("want %d tools, got %d", 3*fakeTools, len(tools))
	}
	if got := toolName(t, tools[0]) + " " + toolName(t, tools[fakeTools]) + " " + toolName(t, tools[2*fakeTools]); got != "pair__a_rich pair__b_rich solo__rich" {
		t.Errorf("tools not in config order: %s", got)
	}
	prompts := collectPages(t, c, "prompts/list", "prompts")
	if len(prompts) != 9 {
		t.Fatalf("want 9 prompts from three servers' pages, got %d", len(prompts))
	}
	var uris []string
	for _, r := range collectPages(t, c, "resources/list", "resources") {
		var res struct {
			URI string `json:"uri"`
		}
		mustUnmarshal(t, r, &res)
		uris = append(uris, res.URI)
	}
	if len(uris) != 9 || uris[0] != "fake://a/res/1" || uris[3] != "fake://b/res/1" || uris[8] != "fake://solo/res/3" {
		t.Errorf("resources: %v", uris)
	}
	// Each resource, prompt and template reaches the server that owns it.
	for _, uri := range []string{"fake://b/res/2", "fake://solo/item/9"} {
		if got := string(c.call("resources/read", map[string]any{"uri": uri})); !strings.Contains(got, "content of "+uri) {
			t.Errorf("read %s: %s", uri, got)
		}
	}
}

func TestUpstreamsNegotiateIndependentlyAndGetInitialized(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  old: { description: speaks 2024-11-05, command: %q, args: ["-version", "2024-11-05"] }
  new: { description: speaks what it is asked, command: %q }
`, fakeBin, fakeBin))
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	mustUnmarshal(t, c.initialize("2025-06-18"), &res)
	if res.ProtocolVersion != "2025-06-18" {
		t.Errorf("client negotiated %s", res.ProtocolVersion)
	}
	c.waitFlatTools(2 * fakeTools)
	for group, want := range map[string]string{"old": "2024-11-05", "new": mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		text, _ := toolText(t, c.call("tools/call", map[string]any{"name": group + "__state", "arguments": map[string]any{}}))
		var st struct {
			Initialized     bool   `json:"initialized"`
			ProtocolVersion string `json:"protocolVersion"`
			ClientName      string `json:"clientName"`
		}
		mustUnmarshal(t, []byte(text), &st)
		if !st.Initialized || st.ProtocolVersion != want || st.ClientName != "dynamic-mcp" {
			t.Errorf("upstream %s saw %+v, want initialized with %s", group, st, want)
		}
	}
}

func TestProtocolVersionNegotiation(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin))
	for _, v := range mcp.ValidProtocolVersions {
		if mcp.IsModernProtocol(v) {
			continue
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		mustUnmarshal(t, c.initialize(v), &res)
		if res.ProtocolVersion != v {
			t.Errorf("client asked for %s, hub answered %s", v, res.ProtocolVersion)
		}
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	mustUnmarshal(t, c.initialize("1999-01-01"), &res)
	if res.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("unknown version: hub answered %s", res.ProtocolVersion)
	}
	c.waitGroupsReady("f")

	// 2026-07-28 has no handshake: each request carries its version.
	meta := map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
	var modern struct {
		ResultType string            `json:"resultType"`
		Tools      []json.RawMessage `json:"tools"`
	}
	mustUnmarshal(t, c.call("tools/list", meta), &modern)
	if modern.ResultType != "complete" || len(modern.Tools) != 2 {
		t.Errorf("modern tools/list: %+v", modern)
	}
	if _, rpcErr := c.request("server/discover", meta); rpcErr != nil {
		t.Errorf("server/discover: %+v", rpcErr)
	}
	c.call("ping", nil)
}

func TestMalformedInputGetsAnErrorAndNothingElseBreaks(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
	cmd := exec.Command(hubBin, "serve", "-c", cfg)
	in := strings.Join([]string{
		`this is not json`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"nonsense"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		"",
	}, "\n")
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hub: %v", err)
	}
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("missing %s in:\n%s", w, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout holds a line that is not JSON-RPC: %q", line)
		}
	}
}

func TestNoChildOutlivesTheHub(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	text, _ := toolText(t, c.call("tools/call", map[string]any{"name": "f__pid", "arguments": map[string]any{}}))
	pid, err := strconv.Atoi(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.tr.Close(); err != nil { // closes the hub's stdin and waits for it
		t.Logf("hub exit: %v", err)
	}
	await.Costly(t, 10*time.Second, "upstream child to exit", func() bool {
		return noSuchProcess(pid)
	})
}

// The commands of the command line, run in this process as main runs
// them: what each prints and the exit status main would end with.
func TestCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n  g: { description: gee, command: %q }\n", fakeBin, fakeBin)), 0o600)
	bad := filepath.Join(repoDir, "testdata", "config", "bad.yaml")
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runCommand(t, "", args...)
	}

	if out, _, code := run("validate", "-c", good); code != 0 || !strings.Contains(out, "OK (dynamic mode, 2 groups, 2 servers)") {
		t.Errorf("validate good: %d %q", code, out)
	}
	_, errOut, code := run("validate", "-c", bad)
	if code != 1 || !strings.Contains(errOut, "bad.yaml:7: groups.files.colour: unknown key") || !strings.Contains(errOut, "6 problem(s)") {
		t.Errorf("validate bad: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := run("serve", "-c", bad); code != 1 || !strings.Contains(errOut, "unknown key") {
		t.Errorf("serve bad config: exit %d\n%s", code, errOut)
	}
	if _, _, code := run("frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	// Commands that do not log take no logging flags.
	if _, errOut, code := run("validate", "-c", good, "--log-level", "debug"); code != 2 || !strings.Contains(errOut, "log-level") {
		t.Errorf("validate --log-level: exit %d, want 2\n%s", code, errOut)
	}
	if _, errOut, code := run("policy", "test", "-c", good, "--fixture", good, "--expect", "maybe"); code != 2 || !strings.Contains(errOut, "use allow, deny, log or prompt") {
		t.Errorf("policy test --expect maybe: exit %d, want 2\n%s", code, errOut)
	}
	out, _, code := run("tools", "-c", good)
	if code != 0 || !strings.Contains(out, "  echo") || !strings.Contains(out, "initial tools/list: dynamic mode") {
		t.Errorf("tools: exit %d\n%s", code, out)
	}
	out, _, _ = run("tools", "-c", good, "g")
	if strings.Contains(out, "fake\n") || !strings.Contains(out, "g  ") {
		t.Errorf("tools for one group:\n%s", out)
	}
	// What a deny-list hides is not printed as a tool the client gets, by
	// tools or status: it is counted apart.
	denied := filepath.Join(dir, "denied.yaml")
	os.WriteFile(denied, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q, deny: [\"^echo$\"] }\n", fakeBin)), 0o600)
	out, _, _ = run("tools", "-c", denied)
	if strings.Contains(out, "  echo") || !strings.Contains(out, "(1 more of f hidden by the group's deny/allow lists)") {
		t.Errorf("tools with echo denied:\n%s", out)
	}
	out, _, _ = run("status", "-c", denied)
	if !regexp.MustCompile(`(?m)^f\s+f\s+stdio\s+ready\s+2025-11-25\s+` + strconv.Itoa(fakeTools-1) + `\+1 hidden\s+\d`).MatchString(out) {
		t.Errorf("status with echo denied:\n%s", out)
	}

	out, _, code = run("status", "-c", good)
	if code != 0 || !strings.Contains(out, "GROUP  SERVER  TRANSPORT  STATE") || !regexp.MustCompile(`(?m)^f\s+f\s+stdio\s+ready\s+2025-11-25\s+`+strconv.Itoa(fakeTools)+`\s+\d`).MatchString(out) {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n  b: { description: broken, command: %q, args: [\"-exit-at-start\", \"4\"] }\n", fakeBin, fakeBin)), 0o600)
	out, _, code = run("status", "-c", broken)
	if code != 1 || !strings.Contains(out, "failed") || !strings.Contains(out, "exited (status 4): fake: cannot start: missing API key") {
		t.Errorf("status with a broken server: exit %d\n%s", code, out)
	}
	// A child that runs but never answers is reported as such, not by the
	// signal the hub stopped it with (after a short ladder: sleep does not
	// end with its stdin), once its longer try (2s) has timed out too.
	silent := filepath.Join(dir, "silent.yaml")
	os.WriteFile(silent, []byte("settings: { connect_timeout: 1s, stop_grace: 100ms, retry: { initial_interval: 10ms } }\ngroups:\n  s: { description: silent, command: sleep, args: [\"60\"] }\n"), 0o600)
	out, errOut, code = run("status", "-c", silent)
	if code != 1 || !strings.Contains(out, "no answer to initialize within 2s (connect timeout)") ||
		!strings.Contains(errOut, "note: s did not answer initialize within 1s (connect timeout): waiting for its next try, which waits 2s") {
		t.Errorf("status with a silent server: exit %d\n%s\n%s", code, out, errOut)
	}
}

// The program as a process: its exit statuses, COMMAND -h, and the two
// ways to serve without the serve command.
func TestCLIProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n  g: { description: gee, command: %q }\n", fakeBin, fakeBin)), 0o600)
	bad := filepath.Join(repoDir, "testdata", "config", "bad.yaml")

	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(hubBin, args...)
		cmd.Env = append(os.Environ(), "DYNAMIC_MCP_CONFIG=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}

	if out, _, code := run("validate", "-c", good); code != 0 || !strings.Contains(out, "OK (dynamic mode, 2 groups, 2 servers)") {
		t.Errorf("validate good: %d %q", code, out)
	}
	if _, errOut, code := run("serve", "-c", bad); code != 1 || !strings.Contains(errOut, "dynamic-mcp: ") || !strings.Contains(errOut, "unknown key") {
		t.Errorf("serve bad config: exit %d\n%s", code, errOut)
	}
	if _, _, code := run("frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if _, _, code := run(); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
	// COMMAND -h prints the command's flags, with its own defaults, and
	// succeeds.
	if out, errOut, code := run("tools", "-h"); code != 0 || !strings.Contains(out, `(default "warn")`) || errOut != "" {
		t.Errorf("tools -h: exit %d\n%s\n%s", code, out, errOut)
	}

	// dynamic-mcp FILE and DYNAMIC_MCP_CONFIG both serve.
	for name, argv := range map[string][]string{"file argument": {good}, "environment": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if argv == nil {
				env = []string{"DYNAMIC_MCP_CONFIG=" + good}
			}
			c := startProcess(t, env, append([]string{hubBin}, argv...)...)
			c.initialize("2025-06-18")
			c.waitGroupsReady("f", "g")
		})
	}
}

// Every command's -h prints its synopsis, its own flags as they are typed
// (two dashes; -c and --config as one line) and an example, and succeeds.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for name, h := range commandHelp {
		out, errOut, err := runBinary(t, home, append(strings.Fields(name), "-h")...)
		if err != nil || !strings.HasPrefix(out, "usage: "+h.synopsis+"\n") || !strings.Contains(out, "\nexample:\n  "+h.example+"\n") {
			t.Errorf("%s -h: %v\n%s%s", name, err, out, errOut)
			continue
		}
		if regexp.MustCompile(`(?m)^  -[a-z][a-z]|^  --config|^  --[a-z] `).MatchString(out) {
			t.Errorf("%s -h: flags not as typed:\n%s", name, out)
		}
		// The synopsis names every flag the command takes, but -c and the
		// log flags that many commands share.
		for _, m := range regexp.MustCompile(`(?m)^  (?:-c, )?(--[a-z-]+)`).FindAllStringSubmatch(out, -1) {
			if f := m[1]; f != "--config" && !strings.HasPrefix(f, "--log-") && !regexp.MustCompile(regexp.QuoteMeta(f)+`([\s\]|=]|$)`).MatchString(h.synopsis) {
				t.Errorf("%s -h: the synopsis does not name %s:\n%s", name, f, out)
			}
		}
	}
	// What dynamic-mcp passes to itself is not offered to users.
	if out, _, _ := runBinary(t, home, "serve", "-h"); strings.Contains(out, "--hub") || !strings.Contains(out, "--standalone") {
		t.Errorf("serve -h:\n%s", out)
	}
	// auth status has no login flags, and auth login no --user.
	if out, _, _ := runBinary(t, home, "auth", "status", "-h"); strings.Contains(out, "--no-browser") || !strings.Contains(out, "--user SUBJECT") {
		t.Errorf("auth status -h:\n%s", out)
	}
}
