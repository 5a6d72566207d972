package main

import (
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// relayConfig is the config of replicas on the store at url: group f, the
// fake upstream with its flood tool, shared; group g, the fake again,
// one child per session (so that its ask tool's elicitation goes to the
// session that called it).
func relayConfig(t testing.TB, url string) string {
	t.Helper()
	cfg := fmt.Sprintf("mode: flat\nstore: %q\nsettings: {call_timeout: 30s}\nhttp:\n  session_keys: [\"${DYNAMIC_MCP_SESSION_KEY}\"]\ngroups:\n"+
		"  f: { description: fake, command: %q, args: [\"-flood\"] }\n"+
		"  g: { description: asks, command: %q, isolation: per-session }\n", url, fakeBin, fakeBin)
	return writeConfig(t, cfg)
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
	replicas, addrs := startReadyReplicas(t, 3, func() *hubReplica { return startReplicaAt(t, path, "debug") }) // the relay's lines say where a GET stream is open
	n := startNginxReplicas(t, addrs, true)

	ctx, cancel := untilHung(t)
	defer cancel()
	node := startNodeScript(t, ctx, n.caFile, "relay.mjs", "--url", n.https+"/mcp", "--token", testToken)
	defer node.stop(t)
	node.next(t, "live")
	node.next(t, "kill me")

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
			io.WriteString(node.stdin, "http://"+r.addr+"/mcp\n") // where client C floods
			break
		}
	}
	node.next(t, "flooding")
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil { // while C floods
		t.Fatal(err)
	}
	<-holder.exited
	node.next(t, "flooded")
	node.next(t, "resumed")
	node.next(t, "elicited")
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
