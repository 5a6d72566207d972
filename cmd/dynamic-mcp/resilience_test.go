package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// callText calls a flat-mode tool and returns its text and isError.
func (c *client) callText(tool string, args map[string]any) (string, bool) {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return toolText(c.t, c.call("tools/call", map[string]any{"name": tool, "arguments": args}))
}

func TestFailedStartIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "starts")
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  flaky:
    description: fails twice, then starts
    command: %q
    args: ["-fail-first", "2", "-count-file", %q]
    retry: { attempts: 3, initial_interval: 100ms }
  never:
    description: never starts
    command: %q
    args: ["-exit-at-start", "2"]
    retry: { attempts: 2, initial_interval: 50ms, reconnect_interval: 200ms }
  fine: { description: always fine, command: %q }
`, fakeBin, count, fakeBin, fakeBin))
	c.initialize("2025-06-18")
	// The flaky group comes up on its third start; the client hears of it.
	c.waitFlatTools(2 * fakeTools)
	if b, _ := os.ReadFile(count); string(b) != "3" {
		t.Errorf("flaky server started %s times, want 3", b)
	}
	if text, _ := c.callText("flaky__echo", map[string]any{"text": "up"}); text != "up" {
		t.Errorf("flaky after retries: %q", text)
	}
	// The broken one is tried again and again, with its reason logged,
	// while the others serve.
	await.Costly(t, 5*time.Second, "periodic reconnects", func() bool {
		return strings.Count(c.stderr.String(), "fake: cannot start: missing API key") >= 4
	})
	if !strings.Contains(c.stderr.String(), `upstream unavailable" upstream=never err="exited (status 2): fake: cannot start: missing API key"`) {
		t.Errorf("log does not give the reason:\n%s", c.stderr.String())
	}
	if text, _ := c.callText("fine__echo", map[string]any{"text": "still"}); text != "still" {
		t.Errorf("other group: %q", text)
	}
}

func TestCrashedUpstreamComesBack(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  f:
    description: fake
    command: %q
    retry: { initial_interval: 100ms }
`, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	before, _ := c.callText("f__pid", nil)
	text, isErr := c.callText("f__crash", nil)
	if !isErr || text != "upstream f exited (status 3): fake: about to crash" {
		t.Fatalf("crash answered %q (isError %v)", text, isErr)
	}
	await.Costly(t, 10*time.Second, "reconnected upstream", func() bool {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "f__pid", "arguments": map[string]any{}})
		if rpcErr != nil {
			return false
		}
		after, isErr := toolText(t, res)
		return !isErr && after != before
	})
}

func TestTimedOutCallIsCancelledAndItsLateReplyDropped(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  f: { description: fake, command: %q, timeout: 300ms }
`, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	start := time.Now()
	text, isErr := c.callText("f__hang", nil)
	if !isErr || text != "upstream f: no answer to tools/call within 300ms" {
		t.Fatalf("hang answered %q (isError %v)", text, isErr)
	}
	if took := time.Since(start); took > 3*time.Second*await.Slow {
		t.Errorf("timeout took %s", took)
	}
	// The sleep's reply comes after its timeout; the calls made meanwhile
	// get their own answers, never that one. They go on until the fake
	// has written that reply: it reaches the hub before the answer to the
	// state call that reports it, so the hub has dropped it by then.
	text, isErr = c.callText("f__sleep", map[string]any{"ms": 600})
	if !isErr {
		t.Fatalf("slow call did not time out: %q", text)
	}
	var st struct {
		Cancelled []any `json:"cancelled"`
		Slept     int   `json:"slept"`
	}
	var state string
	// These calls are bound by the same 300 ms: on a loaded machine one
	// can run out of it (a state call did, under -race, while a schema
	// compiled for 2.3 s). Such a call is asked again, and its
	// cancellation counted; it never gets another call's answer.
	timedOut := 0
	call := func(name string, args map[string]any) string {
		for {
			text, isErr := c.callText(name, args)
			if !isErr || text != "upstream f: no answer to tools/call within 300ms" {
				return text
			}
			timedOut++
		}
	}
	deadline := time.Now().Add(10 * time.Second * await.Slow) // bounds a hang: the fake sends the reply 600 ms after the call
	for i := 0; st.Slept == 0; i++ {
		want := "call " + strconv.Itoa(i)
		if got := call("f__echo", map[string]any{"text": want}); got != want {
			t.Fatalf("call %d got %q", i, got)
		}
		state = call("f__state", nil)
		mustUnmarshal(t, []byte(state), &st)
		if time.Now().After(deadline) {
			t.Fatal("the slow call's late reply never came")
		}
	}
	if got := call("f__echo", map[string]any{"text": "after"}); got != "after" {
		t.Fatalf("the call after the late reply got %q", got)
	}
	// A state call that timed out after the fake answered it is counted
	// by the fake after its answer: the last state may miss at most those.
	if n := len(st.Cancelled); n < 2 || n > 2+timedOut {
		t.Errorf("upstream saw %d notifications/cancelled, want 2 (and up to %d of calls that timed out on a slow machine): %s", n, timedOut, state)
	}
}

func TestMisbehavingUpstreamReplies(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  f: { description: fake, command: %q, args: ["-garbage"], timeout: 5m }
`, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	// Each is answered long before the 5 min call timeout: reading past a
	// 20 MiB line under -race on a busy 2-core machine took 3.4 s once,
	// and 22 s at a load of 56-78 (two copies of this package beside
	// other work), so the bound is wide; an answer by the timeout would
	// take 5 min.
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		want    string
		wantErr bool
	}{
		{"f__echo", map[string]any{"text": "through garbage"}, "through garbage", false},
		{"f__twice", nil, "first", false},
		{"f__stray", nil, "after stray", false},
		{"f__dupkeys", nil, `upstream f sent a message that is an object has a key twice: "Content"`, true},
		{"f__deep", nil, "upstream f sent a message that is nested deeper than 128 levels", true},
		{"f__big", map[string]any{"ms": 20 << 20}, "upstream f sent a message of 2097", true},
	} {
		start := time.Now()
		text, isErr := c.callText(tc.tool, tc.args)
		if isErr != tc.wantErr || !strings.HasPrefix(text, tc.want) {
			t.Errorf("%s: got %.120q (isError %v), want %q", tc.tool, text, isErr, tc.want)
		}
		if took := time.Since(start); took > 2*time.Minute {
			t.Errorf("%s took %s: it should be answered at once, not by the timeout", tc.tool, took)
		}
	}
	text, isErr := c.callText("f__big", map[string]any{"ms": 5 << 20})
	if isErr || len(text) != 5<<20 {
		t.Errorf("a 5 MiB reply: %d bytes, isError %v", len(text), isErr)
	}
	if !strings.Contains(c.stderr.String(), "upstream wrote a line that is not JSON-RPC; skipped") {
		t.Error("garbage on stdout was not logged")
	}
}

func TestEveryRequestGetsExactlyOneAnswer(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
	cmd := exec.Command(hubBin, "serve", "-c", cfg)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	answers := map[string]int{}
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Buffer(nil, 32<<20)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	send := func(id int, method string, params any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		stdin.Write(append(b, '\n'))
	}
	send(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	// Wait for the upstream, then fire calls that misbehave in every way.
	deadline := time.After(20 * time.Second * await.Slow)
	for ready := false; !ready; {
		send(2, "tools/list", nil)
		for line := range lines {
			if strings.Contains(line, `"id":2`) {
				ready = strings.Contains(line, "f__twice")
				break
			}
		}
		select {
		case <-deadline:
			t.Fatal("upstream never came up")
		default:
		}
	}
	ids := []int{}
	for i, tool := range []string{"f__twice", "f__stray", "f__dupkeys", "f__echo", "f__twice", "f__big"} {
		id := 100 + i
		ids = append(ids, id)
		send(id, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 11 << 20, "text": "x"}})
	}
	stdin.Write([]byte(`{"jsonrpc":"2.0","id":200,"method":"ping","params":{"a":1,"A":2}}` + "\n"))
	stdin.Write([]byte(`{"jsonrpc":"2.0","id":201,"method":"ping","params":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}\n"))
	stdin.Write([]byte(`{"jsonrpc":"2.0","id":202,"method":"ping","params":{"pad":"` + strings.Repeat("p", 11<<20) + `"}}` + "\n"))
	ids = append(ids, 200, 201, 202)
	// Every request gets an answer; then a last call goes through the
	// same upstream, after whatever second replies the fake wrote for the
	// calls above, and the client leaves: the hub stops, and everything
	// it wrote has been read when its stdout ends. No wait for answers
	// that should not come.
	answered := func() bool {
		for _, id := range ids {
			if answers[strconv.Itoa(id)] == 0 {
				return false
			}
		}
		return true
	}
	timeout := time.After(20 * time.Second * await.Slow)
	marked := false
collect:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break collect
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal([]byte(line), &m)
			if m.Method == "" {
				answers[string(m.ID)]++
			}
			if string(m.ID) == "300" {
				stdin.Close()
			} else if !marked && answered() {
				marked = true
				send(300, "tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "last"}})
			}
		case <-timeout:
			t.Error("the hub's stdout did not end after its stdin closed")
			break collect
		}
	}
	for _, id := range ids {
		if n := answers[strconv.Itoa(id)]; n != 1 {
			t.Errorf("request %d got %d answers", id, n)
		}
	}
}

func TestStubbornChildAndGrandchildAreKilled(t *testing.T) {
	t.Parallel()
	c, hub := startHubProcess(t, fmt.Sprintf("mode: flat\nsettings: { stop_grace: 300ms }\ngroups:\n  f: { description: fake, command: %q, args: [\"-ignore-term\", \"-grandchild\"] }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	pid, grandchild := fakePIDs(t, c)
	if pid == 0 || grandchild == 0 {
		t.Fatalf("pids: %d %d", pid, grandchild)
	}
	start := time.Now()
	c.tr.Close() // the hub's stdin closes; the ladder takes 300 ms + 300 ms for this child
	if err := hub.Wait(); err != nil {
		t.Errorf("hub exit: %v", err)
	}
	// The ladder's log line says the grace it waited: an event, where a
	// limit on the stop's time (8 s, against the default ladder's 10 s)
	// failed on a busy machine.
	if log := c.stderr.String(); !strings.Contains(log, "sending SIGKILL\" upstream=f grace=300ms") {
		t.Errorf("the ladder did not wait stop_grace: 300ms:\n%s", log)
	}
	for _, p := range []int{pid, grandchild} {
		await.Costly(t, 20*time.Second, fmt.Sprintf("process %d to be gone", p), func() bool {
			return processGone(p)
		})
	}
	t.Logf("hub and stubborn child stopped after %s", time.Since(start).Round(100*time.Millisecond))
	if !strings.Contains(c.stderr.String(), "child did not exit after SIGTERM, sending SIGKILL") {
		t.Errorf("ladder not in the log:\n%s", c.stderr.String())
	}
}

func TestSecondSignalStopsAtOnceLeavingNoChild(t *testing.T) {
	t.Parallel()
	c, hub := startHubProcess(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q, args: [\"-ignore-term\", \"-grandchild\"] }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	pid, grandchild := fakePIDs(t, c)
	hub.Process.Signal(syscall.SIGTERM) // an orderly stop begins: the ladder
	// and a second signal stops it at once. The hub hears the second only
	// once the first has started the stop, which nothing outside shows:
	// signal again until it exits. (The ladder alone takes over 10 s: the
	// child ignores stdin's end and SIGTERM, and each wait is 5 s.)
	exited := make(chan struct{})
	go func() { hub.Wait(); close(exited) }()
	for again := time.NewTicker(20 * time.Millisecond); ; {
		select {
		case <-again.C:
			hub.Process.Signal(syscall.SIGTERM)
			continue
		case <-exited:
			again.Stop()
		}
		break
	}
	// The hub says it stopped at once, and the ladder never reached its
	// SIGKILL: events, where a limit on the stop's time (8 s, against the
	// ladder's 10 s) failed on a busy machine.
	if log := c.stderr.String(); !strings.Contains(log, "second signal, stopping at once") || strings.Contains(log, "sending SIGKILL") {
		t.Errorf("second signal: the hub did not stop at once:\n%s", log)
	}
	for _, p := range []int{pid, grandchild} {
		await.Costly(t, 5*time.Second, fmt.Sprintf("process %d to be gone", p), func() bool {
			return processGone(p)
		})
	}
}

// fakePIDs asks the fake upstream f for its pid and its grandchild's.
func fakePIDs(t *testing.T, c *client) (pid, grandchild int) {
	t.Helper()
	pidText, _ := c.callText("f__pid", nil)
	pid, _ = strconv.Atoi(pidText)
	state, _ := c.callText("f__state", nil)
	var st struct {
		GrandchildPID int `json:"grandchildPid"`
	}
	mustUnmarshal(t, []byte(state), &st)
	return pid, st.GrandchildPID
}

// processGone reports whether pid has exited: no such process, or a
// zombie not yet reaped by its parent (a grandchild re-parented to an
// init that reaps slowly).
func processGone(pid int) bool {
	return noSuchProcess(pid) || isZombie(pid)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
