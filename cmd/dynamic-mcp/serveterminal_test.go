//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serve run by hand on a terminal says what it is and how to see the
// tools, where it printed nothing (a newcomer took that for a hang), and
// when it is a shared hub's bridge, that the hub stays up after Ctrl-C
// and how to stop it; a client's serve (stdin a pipe) is told nothing of
// the kind.
func TestServeOnATerminalSaysWhatItIs(t *testing.T) {
	t.Parallel()
	groups := fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)
	path := writeConfig(t, groups)
	const hint = "serving MCP on stdin and stdout, for an MCP client"
	serveIn := func(env []string, args []string, stdin *os.File, whenStarted func()) string {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hubBin, append([]string{"serve"}, args...)...)
		cmd.Env = append(append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir()), env...)
		var errOut lockedBuffer
		cmd.Stdin, cmd.Stderr = stdin, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		whenStarted()
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve: %v\n%s", err, errOut.String())
		}
		return errOut.String()
	}
	serve := func(stdin *os.File, whenStarted func()) string {
		return serveIn(nil, []string{"-c", path, "--standalone"}, stdin, whenStarted)
	}
	onTerminal := func(serve func(*os.File, func()) string) string {
		ptm, pts := openPTY(t)
		defer ptm.Close()
		return serve(pts, func() {
			pts.Close()
			// ^D at the start of a line: the terminal's end of input, so
			// serve's "client" leaves (kept by the terminal until read).
			if _, err := ptm.Write([]byte{4}); err != nil {
				t.Fatal(err)
			}
		})
	}

	got := onTerminal(serve)
	if !strings.Contains(got, hint) || !strings.Contains(got, "dynamic-mcp tools -c "+path) || !strings.Contains(got, "(Ctrl-C stops it)") {
		t.Errorf("serve on a terminal did not say what it is:\n%s", got)
	}

	s := newShared(t, "settings: { shared_idle: 45s }\n"+groups)
	got = onTerminal(func(stdin *os.File, whenStarted func()) string {
		return serveIn(s.env, []string{"-c", s.path}, stdin, whenStarted)
	})
	if want := "Ctrl-C stops it; the shared hub it uses stops 45s after its last client, dynamic-mcp stop -c " + s.path + " at once"; !strings.Contains(got, want) {
		t.Errorf("a bridge on a terminal does not say that its hub stays, want %q:\n%s", want, got)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := serve(r, func() { w.Close() }); strings.Contains(got, hint) {
		t.Errorf("serve from a pipe (a client) printed the terminal's hint:\n%s", got)
	}
}
