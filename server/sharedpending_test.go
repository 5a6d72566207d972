package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// pendingOn waits until h lists n waiting calls and returns them.
func pendingOn(t *testing.T, h *Hub, n int) []approval.Pending {
	t.Helper()
	var l approval.List
	await.For(t, 5*time.Second, fmt.Sprintf("%d pending approvals", n), func() bool { l = h.Inbox().Approvals(); return len(l.Pending) == n })
	return l.Pending
}

// With store:, a call waiting for approval on one replica is listed on
// every replica, with the replica that holds it; approved on another
// replica, it completes where it waits; denied there, it is answered
// -32001 where it waits; answered, it is listed nowhere.
func TestPendingApprovalsSharedByReplicas(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	ca := inboxClient(t, a)

	ca.send(inboxCall(1, `{"text":"approve me on b"}`))
	p := pendingOne(t, a)
	onB := pendingOn(t, b, 1)[0]
	if onB.ID != p.ID || onB.Tool != "echo" || onB.Group != "f" || onB.Session != p.Session ||
		onB.Replica == "" || onB.Replica != p.Replica || onB.Deadline.IsZero() || !strings.Contains(string(onB.Arguments), "approve me on b") {
		t.Fatalf("a's call as b lists it: %+v (a lists %+v)", onB, p)
	}
	if _, err := b.Inbox().Approve(p.ID, "ui", approval.Options{}); err != nil {
		t.Fatalf("approve on b: %v", err)
	}
	if got := ca.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
		t.Fatalf("a's call approved on b: %s", got)
	}
	pendingOn(t, a, 0)
	pendingOn(t, b, 0)
	if _, err := b.Inbox().Approve(p.ID, "ui", approval.Options{}); err != approval.ErrNoPending {
		t.Errorf("approved again on b: %v", err)
	}

	ca.send(inboxCall(2, `{"text":"deny me on b"}`))
	p = pendingOn(t, b, 1)[0]
	if err := b.Inbox().Deny(p.ID, "cli:bob"); err != nil {
		t.Fatalf("deny on b: %v", err)
	}
	if got := ca.answer("2"); !strings.Contains(got, `-32001`) || !strings.Contains(got, "denied by cli:bob") {
		t.Fatalf("a's call denied on b: %s", got)
	}
	pendingOn(t, b, 0)
	if err := b.Inbox().Deny(p.ID, "ui"); err != approval.ErrNoPending {
		t.Errorf("denied again on b: %v", err)
	}

	// An approval with a grant made on b: a makes the grant (b answers
	// with it), which lets a's next call through without asking.
	ca.send(inboxCall(4, `{"text":"grant me on b"}`))
	p = pendingOn(t, b, 1)[0]
	if g, err := b.Inbox().Approve(p.ID, "ui", approval.Options{Calls: 2, Args: map[string]string{"text": "grant*"}}); err != nil || g == nil || g.CallsLeft != 2 {
		t.Fatalf("approve with a grant on b: %+v, %v", g, err)
	}
	if got := ca.answer("4"); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
		t.Fatalf("a's call approved with a grant on b: %s", got)
	}
	ca.send(inboxCall(5, `{"text":"granted"}`))
	if got := ca.answer("5"); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
		t.Fatalf("a's call under the grant made for b's approval: %s", got)
	}
	if l := b.Inbox().Approvals(); len(l.Grants) != 1 || l.Grants[0].CallsLeft != 1 || l.Grants[0].Used != 2 {
		t.Errorf("the grant as b lists it: %+v", l.Grants)
	}

	// An approval the replica where the call waits cannot apply (a grant
	// whose args do not match the call) is refused on b; the call waits
	// on, and can be answered again.
	ca.send(inboxCall(6, `{"text":"other"}`))
	p = pendingOn(t, b, 1)[0]
	if _, err := b.Inbox().Approve(p.ID, "ui", approval.Options{Calls: 1, Args: map[string]string{"text": "nomatch"}}); err == nil || !strings.Contains(err.Error(), "could not apply") {
		t.Fatalf("an approval a cannot apply, on b: %v", err)
	}
	if err := b.Inbox().Deny(p.ID, "ui"); err != nil {
		t.Fatalf("deny after a failed approval: %v", err)
	}
	if got := ca.answer("6"); !strings.Contains(got, "-32001") {
		t.Fatalf("a's call denied after a failed approval: %s", got)
	}

	// A call cancelled by its client is listed nowhere.
	ca.send(inboxCall(3, `{"text":"cancel me"}`))
	pendingOn(t, b, 1)
	ca.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	pendingOn(t, b, 0)
}

// With store:, the inbox's bounds hold: a session's calls past
// maxPendingPerSession are refused at once on the replica that holds it,
// and those waiting are all listed on the other, and denied there, each
// answered where it waits.
func TestPendingSharedBounds(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files

	const maxPendingPerSession = 16 // approve's
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	ca := inboxClient(t, a)
	for i := 1; i <= maxPendingPerSession; i++ {
		ca.send(inboxCall(i, fmt.Sprintf(`{"text":"call %d"}`, i)))
	}
	pendingOn(t, b, maxPendingPerSession)
	ca.send(inboxCall(100, `{"text":"one too many"}`))
	if got := ca.answer("100"); !strings.Contains(got, "-32001") || !strings.Contains(got, "wait for approval already") {
		t.Fatalf("past the session's bound: %s", got)
	}
	for _, p := range pendingOn(t, b, maxPendingPerSession) {
		var args struct{ Text string }
		mustJSON(t, string(p.Arguments), &args)
		if err := b.Inbox().Deny(p.ID, "ui"); err != nil {
			t.Fatalf("deny %s (%s) on b: %v", p.ID, args.Text, err)
		}
		// The client reads each answer as it comes: one that stops
		// reading is gone once a write to it has waited the write
		// timeout (jsonrpc.DefaultWriteTimeout), and its calls with it.
		// Under load the sixteen denials took longer, and the next found
		// its call gone.
		id := strings.TrimPrefix(args.Text, "call ")
		if got := ca.answer(id); !strings.Contains(got, "-32001") || !strings.Contains(got, "denied by ui") {
			t.Fatalf("a's call %s denied on b: %s", id, got)
		}
	}
	pendingOn(t, a, 0)
}

// With store:, the inspector of one replica lists the calls waiting on
// another (with the replica they wait on) and denies them there.
func TestInspectorListsPendingOfEveryReplica(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	insp := inspect.New(inspect.Options{Upstreams: b.mgr, Approvals: b.Inbox()})
	api := httptest.NewServer(insp.API())
	t.Cleanup(func() { insp.Close(); api.Close() })
	ca := inboxClient(t, a)
	ca.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, a)
	// a lists its call as it writes the call's row: b sees it once written.
	var l approval.List
	await.For(t, 5*time.Second, "b's inspector to list a's call", func() bool {
		l = approval.List{}
		getJSON(t, api.URL+inspect.Prefix+"api/approvals", &l)
		return len(l.Pending) > 0
	})
	if len(l.Pending) != 1 || l.Pending[0].ID != p.ID || l.Pending[0].Replica != a.Inbox().Replica() || l.Pending[0].Tool != "echo" {
		t.Fatalf("b's inspector lists %+v, a has %+v", l.Pending, p)
	}
	resp, err := testClient.Post(api.URL+inspect.Prefix+"api/approvals/"+p.ID+"/deny", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("deny on b's inspector: %s", resp.Status)
	}
	if got := ca.answer("1"); !strings.Contains(got, "-32001") || !strings.Contains(got, "denied by ui") {
		t.Fatalf("a's call denied in b's inspector: %s", got)
	}
}
