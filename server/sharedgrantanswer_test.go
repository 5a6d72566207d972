package server

import (
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// An approval with a grant, made on a replica other than the one where
// the call waits, answers with the grant the other replica made: its id
// and what it covers, as every replica lists it; a grant for the session
// (kept where the session's call waits) is answered with its id, which
// that replica lists.
func TestGrantMadeOnAnotherReplicaIsAnswered(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	ca := inboxClient(t, a)

	ca.send(inboxCall(1, `{"text":"grant on b"}`))
	p := pendingOne(t, a)
	pendingOn(t, b, 1) // a lists its call as it writes its row: b sees it once written
	g, err := b.Inbox().Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)})
	if err != nil || g == nil {
		t.Fatalf("approve with a grant on b: %+v %v", g, err)
	}
	if got := ca.answer("1"); !strings.Contains(got, `"result"`) {
		t.Fatalf("a's call: %s", got)
	}
	if g.ID == "" || g.Tool != "echo" || g.Group != "f" || g.ApprovedBy != "ui" || g.Expires.IsZero() {
		t.Errorf("the grant b answered: %+v", g)
	}
	for name, h := range map[string]*Hub{"a": a, "b": b} {
		if l := h.Inbox().Approvals(); len(l.Grants) != 1 || l.Grants[0].ID != g.ID {
			t.Errorf("%s lists grants %+v, want %s", name, l.Grants, g.ID)
		}
	}
	if err := a.Inbox().Revoke(g.ID, "ui"); err != nil {
		t.Fatal(err)
	}

	ca.send(inboxCall(2, `{"text":"session grant on b"}`))
	p = pendingOne(t, a)
	pendingOn(t, b, 1)
	g, err = b.Inbox().Approve(p.ID, "ui", approval.Options{Session: true})
	if err != nil || g == nil || g.ID == "" {
		t.Fatalf("approve with a session grant on b: %+v %v", g, err)
	}
	ca.answer("2")
	found := false
	for _, x := range a.Inbox().Approvals().Grants {
		found = found || x.ID == g.ID
	}
	if !found {
		t.Errorf("a does not list the session grant %s b answered", g.ID)
	}
}
