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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// TestClosedStdoutDoesNotKillTheHub: a client that closes its end of the
// hub's stdout and then its stdin gets an orderly stop. The hub's next
// write fails (EPIPE); it must not die of SIGPIPE (status -13), which
// would leave its children and their children to nobody.
func TestClosedStdoutDoesNotKillTheHub(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q, args: [\"-grandchild\"] }\n", fakeBin)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hubBin, "serve", "-c", path, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, hubStdout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = hubStdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hubStdout.Close()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		stdout.Close()
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr.String())
		}
	})

	lines := bufio.NewReader(stdout)
	// call sends a request and returns its result.
	call := func(id int, method string, params any) json.RawMessage {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		stdout.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var msg struct {
				ID     json.RawMessage
				Result json.RawMessage
			}
			if json.Unmarshal(line, &msg) == nil && string(msg.ID) == fmt.Sprint(id) {
				return msg.Result
			}
		}
	}
	call(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	deadline := time.Now().Add(30 * time.Second)
	for id := 2; !strings.Contains(string(call(id, "tools/list", nil)), "f__state"); id++ {
		if time.Now().After(deadline) {
			t.Fatal("the fake upstream's tools never came")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var state struct {
		Content []struct{ Text string }
	}
	mustUnmarshal(t, call(1000, "tools/call", map[string]any{"name": "f__state"}), &state)
	var st struct {
		GrandchildPID int `json:"grandchildPid"`
	}
	if len(state.Content) == 1 {
		mustUnmarshal(t, []byte(state.Content[0].Text), &st)
	}
	if st.GrandchildPID == 0 {
		t.Fatalf("no grandchild: %+v", state)
	}

	// The client closes its end of stdout; the answer to its next
	// request has nowhere to go. Then it closes stdin.
	stdout.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1001,"method":"tools/list"}`+"\n")
	// The answer's write fails (EPIPE): the hub says so and stops.
	await.Costly(t, 10*time.Second, "the hub to find its stdout closed", func() bool {
		select {
		case <-done:
			return true
		default:
			return strings.Contains(stderr.String(), "the client stopped reading")
		}
	})
	stdin.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the hub did not exit after its stdin closed")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Fatalf("the hub was killed by %v", ws.Signal())
	}
	t.Logf("the hub exited with status %d", cmd.ProcessState.ExitCode())
	await.Costly(t, 20*time.Second, "the grandchild to be gone", func() bool {
		return processGone(st.GrandchildPID)
	})
}
