package server

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// replicaHub is a hub of yaml on the shared store at url (a replica of a
// team's hub), ready to serve.
func replicaHub(t *testing.T, url, yaml string) *Hub {
	t.Helper()
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	logger := testLogger()
	mgr := upstream.NewWith(cfg, logger, upstream.Options{Store: db})
	mgr.SetClientCapabilities(mcp.ClientCapabilities{})
	h, err := NewWith(cfg, mgr, logger, Options{Store: db})
	if err != nil {
		mgr.Close()
		db.Close()
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close(); db.Close() })
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	return h
}

// With store:, a grant for every session made on one replica lets the
// calls it covers through on another, counted once for all: a grant of
// two calls lets one through on each replica, then the next call asks
// again; a grant revoked on one replica no longer lets calls through on
// the other. The audit of the replica that used it names the grant.
func TestGrantsSharedByReplicas(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	auditB := filepath.Join(t.TempDir(), "audit.jsonl")
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), auditB, "prompt_timeout: 10m", ""))
	ca, cb := inboxClient(t, a), inboxClient(t, b)

	ca.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, a)
	g, err := a.Inbox().Approve(p.ID, "cli:ada", approval.Options{Calls: 2})
	if err != nil || g == nil {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if got := ca.answer("1"); !strings.Contains(got, `"result"`) {
		t.Fatalf("approved on a: %s", got)
	}
	if l := b.Inbox().Approvals(); len(l.Grants) != 1 || l.Grants[0].ID != g.ID || l.Grants[0].CallsLeft != 2 {
		t.Fatalf("the grant as b lists it: %+v", l.Grants)
	}
	cb.send(inboxCall(2, `{"text":"on b"}`))
	if got := cb.answer("2"); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
		t.Fatalf("b's call under a's grant: %s", got)
	}
	if rec := lastAudit(t, auditB, 1); rec.Grant != g.ID || rec.ApprovedBy != "cli:ada" {
		t.Errorf("b's audit of the call: %+v", rec)
	}
	ca.send(inboxCall(3, `{"text":"on a"}`))
	if got := ca.answer("3"); !strings.Contains(got, `"result"`) {
		t.Fatalf("a's call, the grant's last: %s", got)
	}
	cb.send(inboxCall(4, `{"text":"on b again"}`))
	p = pendingOne(t, b) // the grant's calls are used up, on every replica
	if l := a.Inbox().Approvals(); len(l.Grants) != 0 {
		t.Errorf("a used-up grant listed on a: %+v", l.Grants)
	}

	g, err = b.Inbox().Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	cb.answer("4")
	ca.send(inboxCall(5, `{"text":"hi"}`))
	if got := ca.answer("5"); !strings.Contains(got, `"result"`) {
		t.Fatalf("a's call under b's grant: %s", got)
	}
	if err := a.Inbox().Revoke(g.ID, "ui"); err != nil {
		t.Fatalf("revoke on a of b's grant: %v", err)
	}
	if err := b.Inbox().Revoke(g.ID, "ui"); err != approval.ErrNoGrant {
		t.Errorf("revoked twice: %v", err)
	}
	cb.send(inboxCall(6, `{"text":"hi"}`))
	pendingOne(t, b)
}

// With store:, a rate per hub is counted across replicas: 2/minute lets
// one call through on each of two replicas, and the next, on either, is
// refused with the time until a token comes back; a rate per session
// stays with the replica that holds the session.
func TestRateLimitSharedByReplicas(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	rules := `      - {name: hub, action: allow, tool: echo, args: {text: "hub"}, rate: 2/minute, per: hub}
      - {name: session, action: allow, tool: echo, args: {text: "session"}, rate: 1/minute}
      - {action: allow, tool: "*"}
`
	a := replicaHub(t, url, rateYAML(t.TempDir(), "off", "flat", rules, ""))
	b := replicaHub(t, url, rateYAML(t.TempDir(), "off", "flat", rules, ""))
	ca, cb := rateSession(t, a, "s", "", `{}`), rateSession(t, b, "s", "", `{}`)
	first := time.Now() // the hub's bucket fills from its first call on, on the store's clock
	if got := echo(t, ca, 1, "hub"); !got.passed() {
		t.Fatalf("per: hub, on a: %+v", got.Error)
	}
	if got := echo(t, cb, 1, "hub"); !got.passed() {
		t.Fatalf("per: hub, on b: %+v", got.Error)
	}
	echo(t, ca, 2, "hub").refusedSince(t, "per: hub, the 3rd call, on a", "hub", 30, first)
	echo(t, cb, 2, "hub").refusedSince(t, "per: hub, the 4th call, on b", "hub", 30, first)
	if n := b.RateLimited()["f"]["hub"]; n != 1 {
		t.Errorf("b counted %d calls over the limit, want 1", n)
	}
	for _, c := range []*pipeClient{ca, cb} {
		first := time.Now()
		if got := echo(t, c, 3, "session"); !got.passed() {
			t.Fatalf("per: session, each replica's own: %+v", got.Error)
		}
		echo(t, c, 4, "session").refusedSince(t, "per: session, the 2nd", "session", 60, first)
	}
}

// refusedSince is refused for a bucket on the store's clock, which a test
// cannot move: it fills again from its first call on (at since or
// later), so the wait it tells is retryAfter seconds less at most the
// seconds gone since (on a busy machine, calls a second apart made it 29
// where 30 was wanted).
func (a rateAnswer) refusedSince(t *testing.T, what, rule string, retryAfter int, since time.Time) {
	t.Helper()
	gone := int(math.Ceil(time.Since(since).Seconds()))
	if a.Error != nil {
		if got, err := strconv.Atoi(string(a.Error.Data.RetryAfter)); err == nil && got <= retryAfter && got >= retryAfter-gone {
			retryAfter = got
		}
	}
	a.refused(t, what, rule, retryAfter)
}

// A grant made on one replica releases the calls it covers that wait on
// another (announced with NOTIFY), counted against it once each.
func TestSharedGrantReleasesCallsWaitingElsewhere(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	url := pgtest.Start(t)
	a := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	b := replicaHub(t, url, inboxYAML(t.TempDir(), "off", "prompt_timeout: 10m", ""))
	ca, cb := inboxClient(t, a), inboxClient(t, b)
	cb.send(inboxCall(1, `{"text":"waits on b"}`))
	pendingOne(t, b)
	ca.send(inboxCall(1, `{"text":"on a"}`))
	var p approval.Pending
	for _, q := range pendingOn(t, a, 2) { // b's is listed on a too
		if q.Replica == a.Inbox().Replica() {
			p = q
		}
	}
	g, err := a.Inbox().Approve(p.ID, "ui", approval.Options{Calls: 3})
	if err != nil {
		t.Fatal(err)
	}
	ca.answer("1")
	if got := cb.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
		t.Fatalf("b's waiting call after a's grant: %s", got)
	}
	if l := b.Inbox().Approvals(); len(l.Pending) != 0 || len(l.Grants) != 1 || l.Grants[0].ID != g.ID || l.Grants[0].CallsLeft != 2 || l.Grants[0].Used != 2 {
		t.Errorf("after the release: %+v", l)
	}
}
