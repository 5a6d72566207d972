package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// `dynamic-mcp stop` asked as the hub stops of itself (its idle period
// ended: it closes a connection it accepted without reading its hello)
// waits for the hub to go and says it stopped, not "connection reset by
// peer" (seen when a test's cleanup met a shared hub's idle stop).
func TestStopMeetsAHubStoppingOfItself(t *testing.T) {
	if !local.Supported {
		t.Skip("no shared hub on this OS")
	}
	state := t.TempDir()
	path := writeConfig(t, "state_dir: "+state+"\ngroups: {}\n")
	paths, err := local.PathsFor(path, state)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := local.Listen(paths)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The hub's process, which the test ends once it has dropped the
	// stop's connection.
	hub := exec.Command("sleep", "600")
	if err := hub.Start(); err != nil {
		t.Fatal(err)
	}
	defer hub.Process.Kill()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var hello local.Hello
			if err := local.ReadLine(bufio.NewReader(c), &hello); err != nil || hello.Op != local.OpStop {
				// A status is answered as a hub answers it.
				_ = local.WriteLine(c, local.Reply{Version: version, PID: hub.Process.Pid, Status: &local.Status{Config: path}})
				c.Close()
				continue
			}
			// The stop is closed unanswered, as a closing hub's accept
			// loop closes what it accepts; then the hub exits.
			c.Close()
			hub.Process.Kill()
			hub.Wait()
			return
		}
	}()
	var out bytes.Buffer
	if err := stopCmd(t.Context(), []string{"-c", path}, &out); err != nil {
		t.Fatalf("stop while the hub stops of itself: %v", err)
	}
	if want := "stopped the shared hub (pid " + strconv.Itoa(hub.Process.Pid) + ")"; !strings.Contains(out.String(), want) {
		t.Errorf("stop said %q, want %q", out.String(), want)
	}
}
