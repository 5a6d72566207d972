//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// Two hubs (as on two machines: a config and state dir each) on one
// store: the call a client of the first waits on is listed by
// `approvals` against the second, with the replica it waits on, and
// `approve` and `deny` there answer it on the first.
func TestApprovalCommandsAcrossReplicas(t *testing.T) {
	t.Parallel() // its hubs, state dirs and database are its own
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	url := pgtest.Start(t)
	body := fmt.Sprintf(`
store: %q
mode: flat
settings: { shared_idle: 1s, stop_grace: 1s, prompt_timeout: 30s }
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a person" }
`, url, fakeBin)
	a, b := newShared(t, body), newShared(t, body)
	c := a.bridge(t, "alpha")
	c.waitFlatTools(fakeTools)
	cliB := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCommand(t, "", append(args, "-c", b.path)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	b.bridge(t, "beta").waitFlatTools(fakeTools) // b's hub runs
	pendingOnB := func() approval.Pending {
		t.Helper()
		var l approval.List
		await.Costly(t, 10*time.Second, "a call waiting, listed on b", func() bool {
			return json.Unmarshal([]byte(cliB("approvals", "--json")), &l) == nil && len(l.Pending) == 1
		})
		return l.Pending[0]
	}

	first := callAsync(c, "one")
	p := pendingOnB()
	if p.Replica == "" || p.Client != "alpha" || p.Tool != "echo" {
		t.Errorf("a's call as b lists it: %+v", p)
	}
	if out := cliB("approvals"); !strings.Contains(out, p.ID) || !strings.Contains(out, "@ "+p.Replica) {
		t.Errorf("approvals on b does not show the replica a's call waits on:\n%s", out)
	}
	if out := cliB("approve", p.ID); !strings.Contains(out, "approved "+p.ID) {
		t.Errorf("approve on b: %s", out)
	}
	if r := waitResult(t, first); r.rpcErr != nil {
		t.Errorf("a's call approved on b: %+v", r.rpcErr)
	}
	second := callAsync(c, "two")
	p = pendingOnB()
	cliB("deny", p.ID)
	if r := waitResult(t, second); r.rpcErr == nil || r.rpcErr.Code != -32001 || !strings.Contains(r.rpcErr.Message, "denied by cli:") {
		t.Errorf("a's call denied on b: %+v", r.rpcErr)
	}
}
