package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// relayConfig is the config of replicas on the store at url: group f, the
// fake upstream with its flood tool, shared; group g, the fake again,
// one child per session (so that its ask tool's elicitation goes to the
// session that called it).
func relayConfig(t testing.TB, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("mode: flat\nstore: %q\nsettings: {call_timeout: 30s}\nhttp:\n  session_keys: [\"${DYNAMIC_MCP_SESSION_KEY}\"]\ngroups:\n"+
		"  f: { description: fake, command: %q, args: [\"-flood\"] }\n"+
		"  g: { description: asks, command: %q, isolation: per-session }\n", url, fakeBin, fakeBin)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startDebugReplica is startReplica at --log-level debug (the relay's
// lines say where a GET stream is open).
func startDebugReplica(t testing.TB, path string) *hubReplica {
	t.Helper()
	r := &hubReplica{stderr: &lockedBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0", "--log-level", "debug")
	r.cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir(), "DYNAMIC_MCP_SESSION_KEY="+testSessionKey)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.exited:
		case <-time.After(45 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			t.Error("a replica did not stop on SIGINT")
		}
		if strings.Contains(r.stderr.String(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in a replica")
		}
		if t.Failed() {
			t.Logf("stderr of the replica at %s:\n%s", r.addr, r.stderr.String())
		}
	})
	addr := regexp.MustCompile(`serving over HTTP" addr=(\S+)`)
	waitFor(t, 10*time.Second, "a replica to listen", func() bool {
		if m := addr.FindStringSubmatch(r.stderr.String()); m != nil {
			r.addr = m[1]
			return true
		}
		return false
	})
	return r
}

// Three replicas on one database (store:) behind Debian's nginx in
// ROUND ROBIN, no sticky sessions: the official TypeScript SDK client's
// GET stream gets the notifications whichever replica's hub sends them;
// the replica holding the stream is killed (SIGKILL) while another sends
// notifications, the SDK reconnects with Last-Event-ID at another, and
// gets every notification sent, none twice, from the store; then tool
// calls that elicit complete though the SDK's answers reach other
// replicas than the one that asked.
func TestRelayRoundRobinReplicas(t *testing.T) {
	t.Parallel()
	nginxBinary(t)
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	path := relayConfig(t, pgtest.Start(t))
	var replicas []*hubReplica
	var addrs []string
	for range 3 {
		r := startDebugReplica(t, path)
		waitFor(t, 20*time.Second, "replica "+r.addr+" to be ready", r.ready)
		replicas, addrs = append(replicas, r), append(addrs, r.addr)
	}
	n := startNginxReplicas(t, addrs, true)

	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(repoDir, "testdata", "sdkclient", "relay.mjs"), "--url", n.https+"/mcp", "--token", testToken)
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+n.caFile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	nodeErr := &lockedBuffer{}
	cmd.Stderr = nodeErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	checks := make(chan sdkReplicaCheck, 8)
	wg.Go(func() { // ends when node exits and its stdout closes
		defer close(checks)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var c sdkReplicaCheck
			if json.Unmarshal(sc.Bytes(), &c) != nil {
				c = sdkReplicaCheck{Check: "unreadable"}
			}
			c.Line = sc.Text()
			checks <- c
		}
	})
	defer func() {
		stdin.Close()
		cmd.Wait()
		wg.Wait()
		if t.Failed() {
			t.Logf("stderr of relay.mjs:\n%s", nodeErr)
		}
	}()
	next := func(want string) {
		t.Helper()
		c, ok := <-checks
		if !ok || c.Check != want || !c.OK {
			t.Fatalf("want %q ok, got %s", want, c.Line)
		}
		t.Log(c.Line)
	}
	next("live")
	next("kill me")

	const opened = "relay: a GET stream opened here"
	var holder *hubReplica
	for _, r := range replicas {
		if strings.Contains(r.stderr.String(), opened) {
			if holder != nil {
				t.Fatalf("more than one replica opened the client's GET stream before the kill")
			}
			holder = r
		}
	}
	if holder == nil {
		t.Fatal("no replica says it holds the GET stream")
	}
	for _, r := range replicas {
		if r != holder {
			io.WriteString(stdin, "http://"+r.addr+"/mcp\n") // where client C floods
			break
		}
	}
	next("flooding")
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil { // while C floods
		t.Fatal(err)
	}
	<-holder.exited
	next("flooded")
	next("resumed")
	next("elicited")
	reopened, passed := false, false
	for _, r := range replicas {
		if r == holder {
			continue
		}
		reopened = reopened || strings.Contains(r.stderr.String(), opened)
		passed = passed || strings.Contains(r.stderr.String(), "relay: an answer to another replica's request passed on")
	}
	if !reopened {
		t.Error("no other replica opened the GET stream again")
	}
	if !passed {
		t.Error("no answer reached a replica other than the one that asked: round robin did not hold")
	}
}
