package approve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// storeInbox is an inbox on the store at url, as a replica's.
func storeInbox(t *testing.T, url string) *Inbox {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return New(Options{Store: db, Logger: testLogger(), Stop: stop, Spawn: func(f func()) bool { go f(); return true }})
}

// fakeSession is a client session of a call, without elicitation.
type fakeSession struct{ call.Session }

func (fakeSession) ID() string         { return "s" }
func (fakeSession) Caller() string     { return "session s" }
func (fakeSession) UserKey() string    { return "" }
func (fakeSession) Transport() string  { return "stdio" }
func (fakeSession) Sessionless() bool  { return false }
func (fakeSession) ClientName() string { return "test" }
func (fakeSession) CanElicit() bool    { return false }
func (fakeSession) Credential() string { return "" }
func (fakeSession) Elicit(context.Context, any) (json.RawMessage, error) {
	return nil, fmt.Errorf("no elicitation")
}

// The rows of a replica that died go at their deadline: listed until
// then, neither listed nor answerable after.
func TestPendingSharedRowsExpire(t *testing.T) {
	url := pgtest.Start(t)
	b := storeInbox(t, url)
	put := func(id string, deadline time.Time) {
		row, _ := json.Marshal(sharedPending{Pending: approval.Pending{ID: id, Time: time.Now().UTC(), Method: "tools/call",
			Tool: "echo", Group: "f", Server: "f", Replica: "r-gone", Deadline: deadline}})
		if err := b.shared.Put(context.Background(), pendingNS, id, row); err != nil {
			t.Fatal(err)
		}
	}
	put("live", time.Now().Add(time.Minute))
	put("dead", time.Now().Add(-time.Second))
	if l := b.Approvals().Pending; len(l) != 1 || l[0].ID != "live" {
		t.Fatalf("listed: %+v", l)
	}
	if rows, _ := b.shared.All(context.Background(), pendingNS); len(rows) != 1 || rows["live"] == nil {
		t.Errorf("rows past their deadline kept: %d rows", len(rows))
	}
	if err := b.Deny("dead", "ui"); err != approval.ErrNoPending {
		t.Errorf("deny of a row past its deadline: %v", err)
	}
}

// With store:, the bounds of all waiting calls and of one credential's
// hold on all replicas together: calls waiting elsewhere count, and a
// call past a bound is refused at once; rows past their deadline do not
// count.
func TestPendingSharedBoundsOnAllReplicas(t *testing.T) {
	url := pgtest.Start(t)
	a := storeInbox(t, url)
	put := func(id, cred string, deadline time.Time) {
		row, _ := json.Marshal(sharedPending{Pending: approval.Pending{ID: id, Time: time.Now().UTC(), Method: "tools/call",
			Tool: "echo", Group: "f", Server: "f", Replica: "r-other", Deadline: deadline}, Credential: cred})
		if err := a.shared.Put(context.Background(), pendingNS, id, row); err != nil {
			t.Fatal(err)
		}
	}
	live := time.Now().Add(time.Minute)
	for i := range maxPendingPerCredential {
		put(fmt.Sprint("alice-", i), "alice", live)
	}
	add := func(id, cred string) error {
		return a.sharedAdd(&pendingCall{Pending: approval.Pending{ID: id, Deadline: live}, owner: "session " + id, cred: cred})
	}
	if err := add("alice-more", "alice"); err == nil || !strings.Contains(err.Error(), "of this credential wait for approval already, on all replicas") {
		t.Errorf("past the credential's bound on all replicas: %v", err)
	}
	if err := add("bob-1", "bob"); err != nil {
		t.Errorf("another credential: %v", err)
	}
	for i := maxPendingPerCredential + 1; i < maxPending; i++ {
		put(fmt.Sprint("other-", i), "", live)
	}
	put("dead", "", time.Now().Add(-time.Second)) // past its deadline: not counted
	c := &call.Call{Origin: call.Origin{Session: fakeSession{}}, Asked: call.Asked{Method: "tools/call"},
		Route: call.Route{Server: &config.Server{Group: "f", Name: "f"}, Name: "echo", Args: json.RawMessage(`{"text":"one too many"}`)}}
	cfg := &config.Config{}
	err := Wait{Inbox: a, Config: cfg, Client: func(*call.Call) Client { return fakeSession{} }}.Ask(t.Context(), c, policy.Decision{})
	if err == nil || !strings.Contains(err.Error(), "wait for approval already, on all replicas") {
		t.Fatalf("past the bound of all calls on all replicas: %v", err)
	}
	if l := a.list(); len(l.Pending) != 0 {
		t.Errorf("a refused call waits here: %+v", l.Pending)
	}
	if _, err := a.shared.Get(context.Background(), pendingNS, "dead"); err == nil {
		t.Errorf("a row past its deadline is kept")
	}
}
