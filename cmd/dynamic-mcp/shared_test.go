//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// sharedSetup is a config for the shared hub with its own state dir (so
// its own socket), and the environment a bridge needs to join it. The
// hub is stopped when the test ends, and the test fails if one is left.
type sharedSetup struct {
	path string   // the config file
	env  []string // for the bridges: shared mode on, the socket under state_dir
	cfg  *config.Config
}

func newShared(t testing.TB, body string) *sharedSetup {
	t.Helper()
	return newSharedIn(t, t.TempDir(), body)
}

// newSharedIn is newShared with state as the state dir.
func newSharedIn(t testing.TB, state, body string) *sharedSetup {
	t.Helper()
	path := writeConfig(t, "state_dir: "+state+"\n"+body)
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &sharedSetup{path: path, cfg: cfg, env: []string{sharedEnvVar + "=auto", "XDG_RUNTIME_DIR="}}
	t.Cleanup(func() {
		if pid := s.hubPID(); pid != 0 {
			var out bytes.Buffer
			if err := stopCmd(context.Background(), []string{"-c", path}, &out); err != nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("stop the hub: %v", err)
			}
		}
		var log []byte
		if paths, err := local.PathsFor(path, state); err == nil {
			log, _ = os.ReadFile(paths.Log)
		}
		// The shared hub is the race build (its bridges are raceHubBin),
		// and its stderr is this log.
		if raceDetector && bytes.Contains(log, []byte("WARNING: DATA RACE")) {
			t.Error("the race detector found a data race in the shared hub")
		}
		if t.Failed() {
			t.Logf("log of the shared hub:\n%s", log)
		}
	})
	return s
}

// hubPID is the pid of the running shared hub, 0 when none answers.
func (s *sharedSetup) hubPID() int {
	reply, err := askHub(context.Background(), s.cfg, local.OpStatus)
	if err != nil {
		return 0
	}
	return reply.PID
}

// status is the shared hub's own account.
func (s *sharedSetup) status(t testing.TB) local.Status {
	t.Helper()
	reply, err := askHub(context.Background(), s.cfg, local.OpStatus)
	if err != nil || reply.Status == nil {
		t.Fatalf("status: %v", err)
	}
	return *reply.Status
}

// bridge starts `serve -c` as a client starts it, with env added, and
// initializes as name.
func (s *sharedSetup) bridge(t testing.TB, name string, env ...string) *client {
	t.Helper()
	c, err := s.tryBridge(t, name, env...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryBridge is bridge for a goroutine other than the test's.
func (s *sharedSetup) tryBridge(t testing.TB, name string, env ...string) (*client, error) {
	c := startProcess(t, append(append([]string{}, s.env...), env...), raceHubBin, "serve", "-c", s.path, "--log-level", "debug")
	_, rpcErr := c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "1.0"}})
	if rpcErr != nil {
		return nil, fmt.Errorf("initialize %s: %v", name, rpcErr.Message)
	}
	err := c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{
		JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}})
	return c, err
}

// childrenOf lists the pids whose parent is pid and whose command line
// holds want.
func childrenOf(t *testing.T, pid int, want string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), want) {
			out = append(out, n)
		}
	}
	return out
}

// Three clients on one config share one hub and one set of upstream
// children; each is a session of its own, named by its initialize; one
// client killed, the others go on; the hub is gone with its children
// within the idle period and the ladder after the last one leaves.
func TestSharedHubServesEveryClient(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf(`
mode: flat
settings: { shared_idle: 1s, stop_grace: 1s }
groups:
  one: %s
  two: %s
`, fakeGroup(), fakeGroup()))
	names := []string{"alpha", "beta", "gamma"}
	clients := make([]*client, len(names))
	for i, name := range names {
		clients[i] = s.bridge(t, name)
	}
	for i, c := range clients {
		c.waitFlatTools(2 * fakeTools)
		res := c.call("tools/call", map[string]any{"name": "one__echo", "arguments": map[string]any{"text": names[i]}})
		if text, _ := toolText(t, res); !strings.Contains(text, names[i]) {
			t.Fatalf("%s got %s", names[i], text)
		}
	}
	st := s.status(t)
	var got []string
	for _, c := range st.Sessions {
		got = append(got, c.Name)
	}
	if strings.Join(got, ",") != "alpha,beta,gamma" {
		t.Fatalf("sessions %v, want alpha, beta, gamma", got)
	}
	hub := s.hubPID()
	if kids := childrenOf(t, hub, fakeBin); len(kids) != 2 {
		t.Fatalf("the hub runs %d upstream children, want 2 (one per group)", len(kids))
	}

	// One client killed (its bridge, as a client crashing takes it): the
	// others go on.
	_ = clients[0].cmd.Process.Kill()
	await.Costly(t, 10*time.Second, "the hub to see alpha leave", func() bool { return len(s.status(t).Sessions) == 2 })
	for _, c := range clients[1:] {
		c.call("tools/call", map[string]any{"name": "two__echo", "arguments": map[string]any{"text": "still here"}})
	}
	kids := childrenOf(t, hub, fakeBin)
	for _, c := range clients[1:] {
		c.tr.Close()
	}
	// Idle 1s, then each child's ladder (stdin closed: the fake exits).
	await.Costly(t, 10*time.Second, "the hub to exit", func() bool { return processGone(hub) })
	for _, k := range kids {
		if !processGone(k) {
			t.Errorf("upstream child %d outlived the hub", k)
		}
	}
}

// Ten bridges started at the same instant start one hub.
func TestSharedHubTenBridgesOneHub(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 2s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	var wg sync.WaitGroup
	clients := make([]*client, 10)
	for i := range clients {
		wg.Go(func() {
			var err error
			if clients[i], err = s.tryBridge(t, fmt.Sprintf("client-%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := len(s.status(t).Sessions); n != 10 {
		t.Fatalf("the hub has %d sessions, want 10", n)
	}
	hubs := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte("--hub\x00-c\x00"+s.path+"\x00")) && !processGone(atoi(e.Name())) {
			hubs++
		}
	}
	if hubs != 1 {
		t.Fatalf("%d hubs run for the config, want 1", hubs)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// The PATH an upstream is found in does not depend on which client came
// first: a client with a short PATH (Claude Desktop's) and one with the
// user's, in either order, both get the group whose command only the
// config's env PATH finds.
func TestSharedHubPATHOfEitherClient(t *testing.T) {
	t.Parallel()
	// The user's bash profile puts bin, where the server's command is,
	// on PATH; Claude Desktop's short PATH does not have it.
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fakeBin, filepath.Join(bin, "dmcp-fake-upstream")); err != nil {
		t.Fatal(err)
	}
	profile := "export PATH=\"$HOME/bin:$PATH\"\nexport " + fakeupstream.EnvVar + "=1\n"
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	short := "PATH=/usr/bin:/bin"
	full := "PATH=" + bin + ":" + os.Getenv("PATH")
	for _, order := range [][]string{{short, full}, {full, short}} {
		t.Run(strings.Join([]string{order[0][:9], order[1][:9]}, "-then-"), func(t *testing.T) {
			t.Parallel()
			s := newShared(t, `
mode: flat
settings: { shared_idle: 1s, stop_grace: 1s }
groups:
  one:
    description: fake
    command: dmcp-fake-upstream
`)
			for i, env := range order {
				c := s.bridge(t, fmt.Sprint("client-", i), env, "SHELL="+bash, "HOME="+home)
				c.waitFlatTools(fakeTools)
			}
			if n := len(childrenOf(t, s.hubPID(), "dmcp-fake-upstream")); n != 1 {
				t.Errorf("%d upstream processes under the hub, want 1", n)
			}
		})
	}
}

// A bridge whose value of a variable the config reads is not the running
// hub's does not join it: its client gets the server configured with its
// own value, in a hub of its own, and stderr names the variable. One with
// the hub's value joins.
func TestSharedHubOtherValuesNotJoined(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf(`
mode: flat
settings: { shared_idle: 1s, stop_grace: 1s }
groups:
  one:
    description: fake
    command: %q
    env: { FAKE_TOKEN: "${DMCP_TEST_TOKEN:-}" }
`, fakeBin))
	first := s.bridge(t, "first", "DMCP_TEST_TOKEN=one")
	first.waitFlatTools(fakeTools)
	same := s.bridge(t, "same", "DMCP_TEST_TOKEN=one")
	same.waitFlatTools(fakeTools)
	other := s.bridge(t, "other", "DMCP_TEST_TOKEN=two")
	other.waitFlatTools(fakeTools)
	await.Costly(t, 5*time.Second, "the bridge to say why", func() bool {
		return strings.Contains(other.stderr.String(), "not joining the shared hub") && strings.Contains(other.stderr.String(), "DMCP_TEST_TOKEN")
	})
	if strings.Contains(same.stderr.String(), "not joining") {
		t.Errorf("a bridge with the hub's values did not join: %s", same.stderr.String())
	}
	var names []string
	for _, c := range s.status(t).Sessions {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"first", "same"}) {
		t.Errorf("the hub's sessions are %v, want first and same", names)
	}
}

// A hub of another version is not joined: the bridge serves in its own
// process and says why.
func TestSharedHubOfAnotherVersionIsNotJoined(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("groups:\n  one: %s\n", fakeGroup()))
	paths, err := local.PathsFor(s.path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := local.Listen(paths)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close() // before the wait: it ends the accept loop
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var hello local.Hello // read, as a hub does before it refuses
			_ = local.ReadLine(bufio.NewReader(c), &hello)
			_ = local.WriteLine(c, local.Reply{Version: "v0.0.1-other", PID: 1})
			c.Close()
		}
	})
	c := s.bridge(t, "lone")
	c.waitGroupsReady("one")
	await.Costly(t, 5*time.Second, "the bridge to say why", func() bool {
		return strings.Contains(c.stderr.String(), "not joining the shared hub") && strings.Contains(c.stderr.String(), "v0.0.1-other")
	})
}

// After an upgrade: `dynamic-mcp stop` of the new build stops the shared
// hub of the build before (whose clients it does not join), so that every
// client moves to the new build as it reconnects.
// So too when the config no longer loads (the upgrade's new build reads
// it otherwise, or an edit is half done).
func TestStopAHubOfAnotherVersion(t *testing.T) {
	t.Parallel()
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprint("config broken ", broken), func(t *testing.T) {
			t.Parallel()
			s := newShared(t, fmt.Sprintf("settings: { stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
			s.bridge(t, "before-the-upgrade", versionEnvVar+"=v0.0.1-before").waitGroupsReady("one")
			reply, err := askHub(t.Context(), s.cfg, local.OpStatus)
			if !errors.Is(err, local.ErrVersion) || reply.Version != "v0.0.1-before" || reply.PID == 0 {
				t.Fatalf("the hub of the build before: %+v, %v", reply, err)
			}
			if broken {
				f, err := os.OpenFile(s.path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintln(f, "key_of_a_later_version: true")
				f.Close()
				if _, err := configs.Load(s.path); err == nil {
					t.Fatal("the config still loads")
				}
			}
			var out bytes.Buffer
			if err := stopCmd(t.Context(), []string{"-c", s.path}, &out); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("stopped the shared hub (pid %d)", reply.PID); !strings.HasPrefix(out.String(), want) {
				t.Errorf("stop said %q, want %q", out.String(), want)
			}
		})
	}
}

// A socket left by a hub that crashed is replaced: the bridge starts a
// hub and is served.
func TestSharedHubStaleSocketRecovered(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	paths, err := local.PathsFor(s.path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := local.Listen(paths)
	if err != nil {
		t.Fatal(err)
	}
	ul := ln.(interface{ SetUnlinkOnClose(bool) })
	ul.SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, and nothing answers on it
	if _, err := os.Stat(paths.Socket); err != nil {
		t.Fatal(err)
	}
	c := s.bridge(t, "after-crash")
	c.waitGroupsReady("one")
	if s.hubPID() == 0 {
		t.Fatal("no shared hub answers")
	}
}

// A hub that starts on a log file grown over maxHubLog moves it to .1
// first, replacing the one before, so that the log of a hub started again
// and again stays bounded.
func TestSharedHubLogMovedAsideWhenLarge(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("groups:\n  one: %s\n", fakeGroup()))
	paths := s.logDir(t)
	large := bytes.Repeat([]byte("an old line\n"), maxHubLog/12+1)
	if err := os.WriteFile(paths.Log, large, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.Log+".1", []byte("older\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.bridge(t, "c").waitGroupsReady("one")
	if moved, _ := os.ReadFile(paths.Log + ".1"); !bytes.Equal(moved, large) {
		t.Errorf("%s.1 has %d bytes, want the %d of the large log", paths.Log, len(moved), len(large))
	}
	if log, _ := os.ReadFile(paths.Log); bytes.Contains(log, []byte("an old line")) || !bytes.Contains(log, []byte(`"msg":"serving as the shared hub"`)) {
		t.Errorf("the new log has %d bytes, and the old lines or not the new hub's", len(log))
	}
}

// logDir makes the directory of the hub's log, before any hub started,
// and returns the hub's paths.
func (s *sharedSetup) logDir(t *testing.T) local.Paths {
	t.Helper()
	paths, err := local.PathsFor(s.path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(paths.Log), 0o700); err != nil {
		t.Fatal(err)
	}
	return paths
}

// A log file that is a symlink is the user's: it is not moved aside,
// however large its target.
func TestLargeLogSymlinkKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "elsewhere.log"), filepath.Join(dir, "hub.log")
	if err := os.WriteFile(target, make([]byte, maxHubLog+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	moveLargeLog(link, slog.New(slog.DiscardHandler))
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink: %v, %v", fi, err)
	}
	if _, err := os.Lstat(link + ".1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s.1: %v", link, err)
	}
}

// A FIFO at the log's path (nothing reads it) does not hold the client:
// the hub cannot start, and the bridge serves the client itself.
func TestSharedHubLogIsAFIFO(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("groups:\n  one: %s\n", fakeGroup()))
	paths := s.logDir(t)
	if err := syscall.Mkfifo(paths.Log, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(paths.Log) }) // before newShared's cleanup reads it
	s.bridge(t, "c").waitGroupsReady("one")
	if pid := s.hubPID(); pid != 0 {
		t.Fatalf("a shared hub (pid %d) started on a FIFO log", pid)
	}
}

// fakeGroup is a group of one fake upstream.
func fakeGroup() string { return fmt.Sprintf("{ description: fake, command: %q }", fakeBin) }

// Three clients of the official TypeScript SDK, started as a client
// starts a server, on one config: each is a session of one shared hub
// with its own initialize, roots, sampling, elicitation and log level
// (every check of testdata/sdkclient/run.mjs, over stdio). Each client
// has a root and a log level of its own, so a roots answer that reached
// another client's server differs from the direct one, and a message
// below a client's level fails its logging checks.
// TestSharedHubThreeSDKClientsThreeGroups counts the children.
func TestSharedHubSDKClients(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoDir, "testdata", "sdkclient", "run.mjs")
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	direct, _ := json.Marshal(referenceServer(t, "server-everything", "stdio"))
	// Each client's server->client requests reach it on a connection of
	// its own, as over HTTP (isolation: per-session).
	cfg := strings.Replace(everythingConfig(t, "flat"), "settings: {", "settings: { shared_idle: 1s,", 1)
	cfg = strings.Replace(cfg, "description: The reference server\n", "description: The reference server\n    isolation: per-session\n", 1)
	s := newShared(t, cfg)
	hub, _ := json.Marshal([]string{raceHubBin, "serve", "-c", s.path})
	var wg sync.WaitGroup
	for i, level := range []string{"debug", "info", "notice"} {
		wg.Go(func() {
			name := fmt.Sprint("client-", i)
			t.Run(name, func(t *testing.T) {
				runSDKClientEnv(t, s.env, []string{script, "--transport", "stdio", "--mode", "flat", "--group", "everything",
					"--direct", string(direct), "--hub", string(hub), "--client-name", name, "--log-level", level,
					// On a connection of the session's own, what the
					// everything server keeps per connection (the resource
					// a tool adds, a subscription's updates) is not in the
					// lists, which come from the shared connection.
					"--skip", "^resources/(list|read|subscribe)$", "--skip-why", "isolation: per-session lists come from the shared connection"})
			})
		})
	}
	wg.Wait()
	// One hub served them all (each run.mjs also starts the everything
	// server directly, so children are not counted here).
	paths, err := local.PathsFor(s.path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(paths.Log)
	if hubs, sessions := bytes.Count(log, []byte(`"msg":"serving as the shared hub"`)), bytes.Count(log, []byte(`"msg":"client connected"`)); hubs != 1 || sessions < 3 {
		t.Errorf("%d hubs started, %d sessions: want 1 hub, 3 sessions or more", hubs, sessions)
	}
}

// A bridge whose stdin and stdout are not files copies bytes both ways;
// it ends cleanly when its client closes stdin, and with errHubGone when
// the hub goes first.
func TestSharedHubCopyingBridge(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	s.bridge(t, "first") // starts the hub: this test binary cannot
	logger := slog.New(slog.DiscardHandler)
	start := func() (io.WriteCloser, *bufio.Reader, chan error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ended := make(chan error, 1)
		go func() {
			ended <- bridge(t.Context(), s.cfg, "", "error", "", logger, inR, outW, io.Discard)
			outW.Close()
		}()
		fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"copier","version":"1"}}}`)
		out := bufio.NewReader(outR)
		line, err := out.ReadString('\n')
		if err != nil || !strings.Contains(line, `"protocolVersion":"2025-06-18"`) {
			t.Fatalf("initialize through the bridge: %q, %v", line, err)
		}
		return inW, out, ended
	}
	in, out, ended := start()
	in.Close()
	go io.Copy(io.Discard, out)
	if err := <-ended; err != nil {
		t.Fatalf("the bridge ended with %v after its client closed stdin", err)
	}

	in, out, ended = start()
	defer in.Close() // ends the bridge's read of stdin, which outlives it
	go io.Copy(io.Discard, out)
	var buf bytes.Buffer
	if err := stopCmd(t.Context(), []string{"-c", s.path}, &buf); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, errHubGone) {
		t.Fatalf("the bridge ended with %v when the hub stopped, want errHubGone", err)
	} else if paths, _ := local.PathsFor(s.path, s.cfg.StateDir); err.Error() != "the shared hub stopped (dynamic-mcp stop, or a crash: see "+paths.Log+"); reconnect this client to start a new one" {
		t.Errorf("the bridge's error does not say what stopped the hub and where its log is: %v", err)
	}
	if m := regexp.MustCompile(`^stopped the shared hub \(pid \d+\), which served (\d+) clients?: reconnect them`).FindStringSubmatch(buf.String()); m == nil || m[1] == "0" {
		t.Errorf("stop with a client connected said %q, want how many it served", buf.String())
	}
}

// A config change reaches the running shared hub as a reload: every
// client sees the new group.
func TestSharedHubReloads(t *testing.T) {
	t.Parallel()
	body := "mode: flat\nsettings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n"
	s := newShared(t, fmt.Sprintf(body, fakeGroup()))
	a := s.bridge(t, "a")
	a.waitFlatTools(fakeTools)
	b := s.bridge(t, "b")
	old, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path, append(old, fmt.Sprintf("  two: %s\n", fakeGroup())...), 0o600); err != nil {
		t.Fatal(err)
	}
	a.waitFlatTools(2 * fakeTools)
	b.waitFlatTools(2 * fakeTools)
}

// When the shared hub dies, each bridge exits 1, as a crashed server
// would: the client sees its server gone.
func TestSharedHubDiesBridgeExits(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	cmd := exec.Command(raceHubBin, "serve", "-c", s.path)
	cmd.Env = append(os.Environ(), s.env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	pid := s.hubPID()
	if pid == 0 || pid == cmd.Process.Pid {
		t.Fatalf("hub pid %d, bridge pid %d", pid, cmd.Process.Pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "the shared hub stopped (dynamic-mcp stop, or a crash: see ") {
		t.Fatalf("the bridge ended with %v (status %d), stderr:\n%s", err, code, stderr.String())
	}
}

// `dynamic-mcp status` names the shared hub first: its pid, its uptime
// and its sessions by the names and versions their clients gave; with no
// hub running it says so, and that it checks each server itself.
func TestSharedHubStatusNamesIt(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	status := func() string {
		cmd := exec.Command(hubBin, "status", "-c", s.path)
		cmd.Env = append(os.Environ(), s.env...)
		out, _ := cmd.Output() // exit 1 while an upstream is not ready is not this test's concern
		first, _, _ := strings.Cut(string(out), "\n")
		return first
	}
	if got := status(); got != "no hub runs for this config: starting each server to check it" {
		t.Fatalf("status before any client: %q", got)
	}
	before := time.Now()
	s.bridge(t, "alpha")
	s.bridge(t, "beta")
	time.Sleep(1500 * time.Millisecond)
	got := status()
	var pid, n int
	var up, clients string
	if _, err := fmt.Sscanf(got, "shared hub: pid %d, up %s %d session(s): ", &pid, &up, &n); err != nil {
		t.Fatalf("status: %q: %v", got, err)
	}
	uptime, err := time.ParseDuration(strings.TrimSuffix(up, ","))
	if err != nil {
		t.Fatalf("status: uptime %q in %q: %v", up, got, err)
	}
	_, clients, _ = strings.Cut(got, "session(s): ")
	if pid != s.hubPID() || pid == 0 || n != 2 || clients != "alpha 1.0, beta 1.0" {
		t.Fatalf("status: %q; want pid %d, 2 sessions: alpha 1.0, beta 1.0", got, s.hubPID())
	}
	if uptime < time.Second || uptime > time.Since(before)+time.Second {
		t.Fatalf("status: up %s, want between 1s and %s", uptime, time.Since(before).Round(time.Second))
	}
}

// A shared hub that takes connections and answers nothing (stopped,
// stuck, or stalled by its machine) costs a client two hellos, not seven
// and three hubs started in vain (35 s, past a client's own timeout for
// a server's start): the bridge serves in its own process, saying why and
// what stops that hub; `status` names it; and `stop` stops it (SIGTERM,
// then SIGCONT for a stopped process).
func TestSharedHubThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("groups:\n  one: %s\n", fakeGroup()))
	s.bridge(t, "first").waitGroupsReady("one")
	pid := s.hubPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before newShared's, which asks the hub
		_ = syscall.Kill(pid, syscall.SIGCONT)
	})
	c := s.bridge(t, "second")
	c.waitGroupsReady("one")
	await.Costly(t, 5*time.Second, "the bridge to say why it serves alone", func() bool {
		return strings.Contains(c.stderr.String(), "did not answer") && strings.Contains(c.stderr.String(), "dynamic-mcp stop -c "+s.path)
	})
	if strings.Contains(c.stderr.String(), "starting the shared hub") {
		t.Errorf("the bridge started a hub beside one that holds the socket:\n%s", c.stderr.String())
	}

	var out bytes.Buffer
	_ = statusCmd(t.Context(), []string{"-c", s.path}, &out, io.Discard)
	if want := "shared hub: pid " + strconv.Itoa(pid) + ", not answering"; !strings.Contains(out.String(), want) {
		t.Errorf("status said %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := stopCmd(t.Context(), []string{"-c", s.path}, &out); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if want := "stopped the shared hub (pid " + strconv.Itoa(pid) + ")"; !strings.Contains(out.String(), want) {
		t.Errorf("stop said %q, want %q", out.String(), want)
	}
}
