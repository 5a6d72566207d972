//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// sdkDriver is one client of the official TypeScript SDK
// (testdata/sdkclient/shared.mjs), which starts `dynamic-mcp serve` as a
// client starts its server and does one command at a time.
type sdkDriver struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *lockedBuffer
}

func startSDKDriver(t *testing.T, s *sharedSetup, name string) *sdkDriver {
	t.Helper()
	server, _ := json.Marshal([]string{raceHubBin, "serve", "-c", s.path})
	d := &sdkDriver{name: name, stderr: &lockedBuffer{}}
	d.cmd = exec.Command("node", filepath.Join(repoDir, "testdata", "sdkclient", "shared.mjs"), "--name", name, "--server", string(server))
	d.cmd.Env = append(append(os.Environ(), clientTimeoutEnv()), s.env...)
	d.cmd.Stderr = d.stderr
	// Its bridge inherits stderr, and outlives a killed node for a moment.
	d.cmd.WaitDelay = 10 * time.Second
	var err error
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.out = bufio.NewScanner(stdout)
	d.out.Buffer(nil, 1<<20)
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.stdin.Close()
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
		if t.Failed() {
			t.Logf("stderr of client %s:\n%s", name, d.stderr.String())
		}
	})
	if _, err := d.answer(); err != nil {
		t.Fatalf("client %s: %v", name, err)
	}
	return d
}

// answer reads the answer to the last command.
func (d *sdkDriver) answer() (json.RawMessage, error) {
	if !d.out.Scan() {
		return nil, fmt.Errorf("client %s ended: %v", d.name, d.out.Err())
	}
	var a struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(d.out.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("client %s said %q: %w", d.name, d.out.Text(), err)
	}
	if !a.OK {
		return nil, fmt.Errorf("client %s: %s", d.name, a.Error)
	}
	return a.Result, nil
}

func (d *sdkDriver) do(cmd map[string]any) (json.RawMessage, error) {
	b, _ := json.Marshal(cmd)
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("client %s: %w", d.name, err)
	}
	return d.answer()
}

// callText calls tool with args and returns the text of its result.
func (d *sdkDriver) callText(tool string, args map[string]any) (string, error) {
	raw, err := d.do(map[string]any{"op": "call", "name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", err
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return "", fmt.Errorf("client %s: %s failed: %s", d.name, tool, text)
	}
	return text, nil
}

// logLevels are the levels of RFC 5424 in the order MCP gives them
// (server/utilities/logging).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// The demonstration of issue 22: three clients nobody here wrote (the
// TypeScript SDK client over stdio, starting `serve -c` as a client starts
// a server) on one config with three groups (the everything server, the
// memory server and the fake upstream). The hub runs one set of upstream
// children, counted in /proc; each client's roots, elicitation answers
// and log level are its own; one client killed, the others go on; after
// the last one leaves the hub and its children are gone within
// shared_idle and the stop ladder.
func TestSharedHubThreeSDKClientsThreeGroups(t *testing.T) {
	t.Parallel()
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	everything := referenceServer(t, "server-everything", "stdio")
	memory := referenceServer(t, "server-memory")
	const idle, grace = time.Second, time.Second
	s := newShared(t, fmt.Sprintf(`
mode: flat
settings: { shared_idle: %s, stop_grace: %s, `+nodeWaits+` }
groups:
  everything: { description: The reference server, command: node, args: %s }
  memory:
    description: A knowledge graph
    command: node
    args: %s
    env: { MEMORY_FILE_PATH: %q }
  fake: %s
`, idle, grace, yamlList(everything[1:]), yamlList(memory[1:]), filepath.Join(t.TempDir(), "memory.jsonl"), fakeGroup()))

	names := []string{"alpha", "beta", "gamma"}
	levels := map[string]string{"alpha": "debug", "beta": "warning", "gamma": "error"}
	clients := make([]*sdkDriver, len(names))
	for i, name := range names {
		clients[i] = startSDKDriver(t, s, name)
	}
	// Every group's tools listed (the node servers take a moment).
	await.Costly(t, 30*time.Second, "every group to be listed", func() bool {
		for _, tool := range []string{"everything__echo", "memory__read_graph", "fake__echo"} {
			if _, err := clients[0].callText(tool, map[string]any{"message": "up?", "text": "up?"}); err != nil {
				return false
			}
		}
		return true
	})

	hub := s.hubPID()
	var kids []int
	for _, want := range []string{"server-everything", "server-memory", fakeBin} {
		k := childrenOf(t, hub, want)
		if len(k) != 1 {
			t.Fatalf("the hub runs %d children of %s, want 1 for all three clients", len(k), want)
		}
		kids = append(kids, k...)
	}
	if all := childrenOf(t, hub, ""); len(all) != 3 {
		t.Fatalf("the hub runs %d children, want 3 (one per group): %v", len(all), all)
	}
	st := s.status(t)
	var sessions []string
	for _, c := range st.Sessions {
		sessions = append(sessions, c.Name)
	}
	if strings.Join(sessions, ",") != "alpha,beta,gamma" {
		t.Fatalf("the hub's sessions are %v, want alpha, beta, gamma", sessions)
	}

	// Each client in turn (a request an upstream sends on its own goes
	// to the one client with calls in flight to it): its roots, its
	// elicitation answer, its log level.
	others := func(name string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == name })
	}
	for _, c := range clients {
		if _, err := c.do(map[string]any{"op": "setLevel", "level": levels[c.name]}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		roots, err := c.callText("fake__ask", map[string]any{"text": "roots"})
		if err != nil {
			t.Fatal(err)
		}
		elicited, err := c.callText("everything__trigger-elicitation-request", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(roots, "file:///clients/"+c.name) || !strings.Contains(elicited, "Name: "+c.name+" answering") {
			t.Fatalf("%s: the upstreams got roots %s and elicitation answer %q, want %s's own", c.name, roots, elicited, c.name)
		}
		for _, o := range others(c.name) {
			if strings.Contains(roots, o) || strings.Contains(elicited, o) {
				t.Fatalf("%s: the upstreams got %s's answers: roots %s, elicitation %q", c.name, o, roots, elicited)
			}
		}
		if _, err := c.callText("memory__create_entities", map[string]any{"entities": []any{
			map[string]any{"name": c.name, "entityType": "client", "observations": []string{"connected through the shared hub"}}}}); err != nil {
			t.Fatal(err)
		}
		for _, level := range []string{"debug", "warning", "error"} {
			if _, err := c.callText("fake__log", map[string]any{"text": c.name + " at " + level, "level": level}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range clients {
		raw, err := c.do(map[string]any{"op": "seen"})
		if err != nil {
			t.Fatal(err)
		}
		var seen struct {
			Logs []struct {
				Level string `json:"level"`
				Data  any    `json:"data"`
			} `json:"logs"`
		}
		if err := json.Unmarshal(raw, &seen); err != nil {
			t.Fatal(err)
		}
		floor := slices.Index(logLevels, levels[c.name])
		got := map[string]bool{}
		for _, l := range seen.Logs {
			if slices.Index(logLevels, l.Level) < floor {
				t.Errorf("%s (at %s) was sent a %s message: %v", c.name, levels[c.name], l.Level, l.Data)
			}
			got[fmt.Sprint(l.Data)] = true
		}
		for _, level := range []string{"debug", "warning", "error"} {
			want := slices.Index(logLevels, level) >= floor
			if msg := c.name + " at " + level; got[msg] != want {
				t.Errorf("%s (at %s): got its own %s message %v, want %v", c.name, levels[c.name], level, got[msg], want)
			}
		}
	}

	// One client killed (node, as a client crashing): its bridge sees
	// stdin close and leaves; the others go on, at once.
	if err := clients[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await.Costly(t, 10*time.Second, "the hub to see alpha leave", func() bool { return len(s.status(t).Sessions) == 2 })
	// One at a time: the fake's roots/list goes to the one client calling.
	for _, c := range clients[1:] {
		for _, call := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"everything__echo", map[string]any{"message": c.name + " goes on"}, c.name + " goes on"},
			{"memory__read_graph", nil, `"name": "alpha"`},
			{"fake__ask", map[string]any{"text": "roots"}, "file:///clients/" + c.name},
		} {
			text, err := c.callText(call.tool, call.args)
			if err != nil || !strings.Contains(text, call.want) {
				t.Errorf("%s after alpha was killed: %s gave %q, %v; want %q in it", c.name, call.tool, text, err, call.want)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// The others end (stdin closed: the SDK closes its transport). The
	// hub waits shared_idle after the last, then stops its children by
	// the ladder (stdin closed, grace, SIGTERM, grace, SIGKILL): the
	// everything server outlives its stdin and takes one grace.
	for _, c := range clients[1:] {
		c.stdin.Close()
	}
	left := time.Now()
	for _, c := range clients[1:] {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("client %s: %v", c.name, err)
		}
	}
	// The hub leaves on its own: a hub that never does fails at a deadline
	// scaled as await.For's are (a loaded machine stretches the ladder's
	// steps, which start node processes' ends); a hub that does costs only
	// the time it takes.
	deadline := left.Add(idle + 2*grace + 10*time.Second*await.Slow)
	for !processGone(hub) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(left)
	if !processGone(hub) {
		t.Fatalf("the hub still runs %s after the last client left", took)
	}
	for _, k := range kids {
		if !processGone(k) {
			t.Errorf("upstream child %d outlived the hub", k)
		}
	}
	t.Logf("the hub and its children were gone %s after the last client left (shared_idle %s, stop_grace %s)", took.Round(time.Millisecond), idle, grace)
	if took < idle {
		t.Errorf("the hub was gone %s after the last client left, before shared_idle %s", took, idle)
	}
	// Why it left, by its log: it stopped for the idle period, not before
	// shared_idle after the last client left, and for nothing else.
	paths, err := local.PathsFor(s.path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(paths.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := stoppedIdle(log, idle); err != nil {
		t.Error(err)
	}
}

// stoppedIdle checks a shared hub's log: its last "stopping" line says it
// stopped for the idle period, at least idle after the last client left,
// by the hub's own clock.
func stoppedIdle(log []byte, idle time.Duration) error {
	var lastLeft, stopped time.Time
	stopMsg := ""
	for line := range strings.Lines(string(log)) {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch {
		case rec.Msg == "client left":
			lastLeft = rec.Time
		case strings.HasPrefix(rec.Msg, "stopping"):
			stopped, stopMsg = rec.Time, rec.Msg
		}
	}
	switch {
	case stopMsg != "stopping: no client session for the idle period":
		return fmt.Errorf("the hub's last stopping line is %q, want it stopped for the idle period", stopMsg)
	case lastLeft.IsZero() || stopped.Sub(lastLeft) < idle:
		return fmt.Errorf("the hub stopped %s after the last client left (at %s), before shared_idle %s", stopped.Sub(lastLeft), lastLeft, idle)
	}
	return nil
}
