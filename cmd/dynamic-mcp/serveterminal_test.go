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
// tools, where it printed nothing (a newcomer took that for a hang); a
// client's serve (stdin a pipe) is told nothing of the kind.
func TestServeOnATerminalSaysWhatItIs(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin))
	const hint = "serving MCP on stdin and stdout, for an MCP client"
	serve := func(stdin *os.File, whenStarted func()) string {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hubBin, "serve", "-c", path, "--standalone")
		cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
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

	ptm, pts := openPTY(t)
	defer ptm.Close()
	got := serve(pts, func() {
		pts.Close()
		// ^D at the start of a line: the terminal's end of input, so
		// serve's "client" leaves (kept by the terminal until read).
		if _, err := ptm.Write([]byte{4}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(got, hint) || !strings.Contains(got, "dynamic-mcp tools -c "+path) {
		t.Errorf("serve on a terminal did not say what it is:\n%s", got)
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
