package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
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
	stopsHub(t, path, standInHub(t, path, state, false))
}

// `dynamic-mcp stop` of a config whose YAML was broken since its hub
// started (an edit half done) stops that hub, found in the default state
// dir, rather than failing on the parse error and leaving it running.
func TestStopAHubWhoseConfigIsNoLongerYAML(t *testing.T) {
	if !local.Supported {
		t.Skip("no shared hub on this OS")
	}
	path := writeConfig(t, "groups: [\n") // no state_dir that reads: config.Home, the tests' DYNAMIC_MCP_HOME
	stopsHub(t, path, standInHub(t, path, config.Home(), true))
}

// standInHub listens on the socket of the config at path's hub (in
// stateDir) as that hub, a process that stands for it, and returns that
// process. A status is answered as a hub answers it; a stop is answered
// (answersStop) or closed unanswered, as a closing hub's accept loop
// closes what it accepts; then the process ends.
func standInHub(t *testing.T, path, stateDir string, answersStop bool) *exec.Cmd {
	t.Helper()
	return standIn(t, path, stateDir, func(c net.Conn, hub *exec.Cmd) bool {
		var hello local.Hello
		err := local.ReadLine(bufio.NewReader(c), &hello)
		stop := err == nil && hello.Op == local.OpStop
		if !stop || answersStop {
			_ = local.WriteLine(c, local.Reply{Version: version, PID: hub.Process.Pid, Status: &local.Status{Config: path}})
		}
		c.Close()
		if stop {
			hub.Process.Kill()
			hub.Wait()
		}
		return stop
	})
}

// standIn listens on the socket of the config at path's hub (in
// stateDir), starts a process (sleep) and returns it, and answers each
// connection with serve(connection, that process) until serve returns
// true.
func standIn(t *testing.T, path, stateDir string, serve func(net.Conn, *exec.Cmd) (done bool)) *exec.Cmd {
	t.Helper()
	paths, err := local.PathsFor(path, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := local.Listen(paths)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := exec.Command("sleep", "600")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill() }) // reaped by serve, or the test, when it ends it
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil || serve(c, p) {
				return
			}
		}
	}()
	return p
}

// stopsHub runs `dynamic-mcp stop -c path` and checks that it said it
// stopped the hub whose process is hub.
func stopsHub(t *testing.T, path string, hub *exec.Cmd) {
	t.Helper()
	var out bytes.Buffer
	if err := stopCmd(t.Context(), []string{"-c", path}, &out); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if want := "stopped the shared hub (pid " + strconv.Itoa(hub.Process.Pid) + ")"; !strings.Contains(out.String(), want) {
		t.Errorf("stop said %q, want %q", out.String(), want)
	}
}

// A hub of another version that gives a pid the system does not confirm
// as the process answering (one of another PID namespace, or one that
// lies) is not signalled: stop says what to do instead, and the process
// named lives on.
func TestStopSignalsOnlyTheProcessThatAnswered(t *testing.T) {
	if !local.Supported {
		t.Skip("no shared hub on this OS")
	}
	state := t.TempDir()
	path := writeConfig(t, "state_dir: "+state+"\ngroups:\n  one: { description: fake, command: "+strconv.Quote(fakeBin)+" }\n")
	bystander := standIn(t, path, state, func(c net.Conn, p *exec.Cmd) bool {
		// As a hub of another version: the hello read, then refused
		// (a close before the hello is read fails its write).
		var hello local.Hello
		_ = local.ReadLine(bufio.NewReader(c), &hello)
		_ = local.WriteLine(c, local.Reply{Version: "v0.0.1-other", PID: p.Process.Pid, Error: local.ErrVersion.Error()})
		c.Close()
		return false
	})
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	var out bytes.Buffer
	err := stopCmd(t.Context(), []string{"-c", path}, &out)
	if err == nil || !strings.Contains(err.Error(), "the system does not confirm that pid "+strconv.Itoa(bystander.Process.Pid)+" is the hub, so it was not signalled") {
		t.Errorf("stop: %v (%s)", err, out.String())
	}
	if !processAlive(bystander.Process.Pid) {
		t.Error("stop signalled a process the system did not confirm as the hub")
	}
}
