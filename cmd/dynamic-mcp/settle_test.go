package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startSlow runs the command args in process while the test waits for
// its note that a slow server gets a longer try (failing should the
// command end first), then opens gate (the fake answers initialize from
// then on) and returns what the command wrote, and its exit status.
func startSlow(t *testing.T, gate string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- exitStatus(run(t.Context(), args, strings.NewReader(""), &out, &errOut), &errOut)
	}()
	noted := regexp.MustCompile(`did not answer initialize within 1s \(connect timeout\): waiting for its next try, which waits 2s, as serve would \(\d+s at most; Ctrl-C stops\)`)
	deadline := time.After(2 * time.Minute) // bounds a hang only
	for !noted.MatchString(errOut.String()) {
		select {
		case code := <-done:
			t.Fatalf("%s ended (exit %d) without waiting for the slow server's longer try:\n%s\n%s", args[0], code, out.String(), errOut.String())
		case <-deadline:
			t.Fatalf("no note of the slow server:\n%s", errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code = <-done
	return out.String(), errOut.String(), code
}

// A server slower to answer initialize than its connect_timeout (1s) is
// shown ready by status, as serve would bring it up: status says it waits
// for the next try (twice as long) and for how long at most, and shows it
// once up. The fake answers only once the test opens its gate, after the
// note: its first try times out however loaded the machine.
func TestStatusWaitsForASlowServersLongerTry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
settings: {connect_timeout: 1s, retry: {initial_interval: 300ms}}
groups:
  slow:
    description: a server slow to start
    command: %s
    args: ["-gate", %q]
`, fakeBin, gate)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := startSlow(t, gate, "status", "-c", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^slow\s+slow\s+stdio\s+ready\s`).MatchString(out) {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "note: slow did not answer") {
		t.Errorf("status's note does not name the server:\n%s", errOut)
	}
}

// import --probe describes a server slower to start than its connect
// timeout, as status does (above), instead of noting it could not.
func TestImportProbesASlowServer(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	probeConnectTimeout = time.Second
	t.Cleanup(func() { probeConnectTimeout = 0 })
	gate := filepath.Join(home, "gate")
	src := filepath.Join(home, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"slowpoke": map[string]any{"command": fakeBin, "args": []string{"-gate", gate}}}})
	if err := os.WriteFile(src, b, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(home, "c.yaml")
	_, errOut, code := startSlow(t, gate, "import", src, "-o", dst, "--probe")
	if code != 0 || !strings.Contains(errOut, "note: slowpoke did not answer") {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	if got, _ := os.ReadFile(dst); !strings.Contains(string(got), "description: A fake server for tests.") {
		t.Errorf("the slow server was not described by its instructions:\n%s\n%s", got, errOut)
	}
}
