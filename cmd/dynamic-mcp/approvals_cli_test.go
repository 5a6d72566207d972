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
)

// The command line answers the shared hub's inbox: approvals lists the
// call a client without elicitation is waiting on, approve --for 1m lets
// it and the next call through, revoke ends the grant, deny answers the
// next call -32001 "denied by cli:USER".
func TestApprovalCommandsOnTheSharedHub(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf(`
mode: flat
settings: { shared_idle: 1s, stop_grace: 1s, prompt_timeout: 30s }
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a person" }
`, fakeBin))
	c := s.bridge(t, "alpha")
	c.waitFlatTools(fakeTools)
	cli := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCommand(t, "", append(args, "-c", s.path)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	pending := func() approval.Pending {
		t.Helper()
		var l approval.List
		await.Costly(t, 10*time.Second, "a call waiting", func() bool {
			return json.Unmarshal([]byte(cli("approvals", "--json")), &l) == nil && len(l.Pending) == 1
		})
		return l.Pending[0]
	}

	first := callAsync(c, "one")
	p := pending()
	if out := cli("approvals"); !strings.Contains(out, p.ID) || !strings.Contains(out, "alpha") || !strings.Contains(out, "f/f") ||
		!strings.Contains(out, "echo") || !strings.Contains(out, "ask-echo") || !strings.Contains(out, "no grants") {
		t.Errorf("approvals:\n%s", out)
	}
	if out := cli("approve", p.ID, "--for", "1m"); !strings.Contains(out, "approved "+p.ID) || !strings.Contains(out, "revoke g-") {
		t.Errorf("approve: %s", out)
	}
	if r := waitResult(t, first); r.rpcErr != nil {
		t.Errorf("approved call: %+v", r.rpcErr)
	}
	if r := waitResult(t, callAsync(c, "two")); r.rpcErr != nil {
		t.Errorf("the call under the grant: %+v", r.rpcErr)
	}
	var l approval.List
	if err := json.Unmarshal([]byte(cli("approvals", "--json")), &l); err != nil || len(l.Grants) != 1 || l.Grants[0].Used != 2 ||
		!strings.HasPrefix(l.Grants[0].ApprovedBy, "cli") {
		t.Fatalf("grants: %+v %v", l, err)
	}
	if out := cli("approvals"); !strings.Contains(out, l.Grants[0].ID) || !strings.Contains(out, "every session") {
		t.Errorf("approvals with a grant:\n%s", out)
	}
	cli("revoke", l.Grants[0].ID)
	if _, errOut, code := runCommand(t, "", "revoke", l.Grants[0].ID, "-c", s.path); code != 1 || !strings.Contains(errOut, "no grant with that id") {
		t.Errorf("revoked twice: exit %d %s", code, errOut)
	}
	third := callAsync(c, "three")
	cli("deny", pending().ID)
	if r := waitResult(t, third); r.rpcErr == nil || r.rpcErr.Code != -32001 || !strings.Contains(r.rpcErr.Message, "denied by cli") {
		t.Errorf("denied call: %+v", r.rpcErr)
	}
	if _, errOut, code := runCommand(t, "", "approve", "nope", "--args", "path=/tmp/**", "-c", s.path); code != 2 || !strings.Contains(errOut, "--args narrows a grant") {
		t.Errorf("--args alone: exit %d %s", code, errOut)
	}
}
