package server

import (
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// The inbox on the store, without a hub: it lists a replica's waiting
// call with the replica; its denial and its approval with a grant are
// applied where the call waits; it lists the grant and revokes it, after
// which the replica asks again.
func TestStoreInbox(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	ca := inboxClient(t, a)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inbox := approve.NewStoreInbox(db, testLogger())

	listed := func() approval.Pending {
		t.Helper()
		var l approval.List
		await.For(t, 5*time.Second, "the waiting call listed by the store's inbox", func() bool { l = inbox.Approvals(); return len(l.Pending) == 1 })
		return l.Pending[0]
	}
	ca.send(inboxCall(1, `{"text":"deny me"}`))
	p := listed()
	if p.Replica != a.Inbox().Replica() || p.Tool != "echo" {
		t.Errorf("listed %+v", p)
	}
	if err := inbox.Deny(p.ID, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	if got := ca.answer("1"); !strings.Contains(got, "denied by cli:ops") {
		t.Errorf("denied by the store's inbox: %s", got)
	}

	ca.send(inboxCall(2, `{"text":"grant me"}`))
	p = listed()
	g, err := inbox.Approve(p.ID, "cli:ops", approval.Options{For: approval.Duration(time.Minute)})
	if err != nil || g == nil || g.Tool != "echo" {
		t.Fatalf("approve with a grant: %+v %v", g, err)
	}
	ca.answer("2")
	if l := inbox.Approvals(); len(l.Grants) != 1 || l.Grants[0].ID != g.ID || len(l.Pending) != 0 {
		t.Errorf("the store's inbox after the grant: %+v", l)
	}
	if err := inbox.Revoke(g.ID, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	ca.send(inboxCall(3, `{"text":"ask again"}`))
	p = listed()
	if err := inbox.Revoke(g.ID, "cli:ops"); err != approval.ErrNoGrant {
		t.Errorf("revoked twice: %v", err)
	}
	if err := inbox.Deny(p.ID, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	ca.answer("3")
}
