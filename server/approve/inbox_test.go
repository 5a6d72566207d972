package approve

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The inbox is bounded per session and in all: a call over a bound is
// denied at once, saying why.
func TestApprovalBounds(t *testing.T) {
	a := New(Options{Logger: testLogger()})
	add := func(owner string) error {
		return a.add(&pendingCall{Pending: approval.Pending{ID: NewID(""), Session: NewID("")}, owner: owner, answer: make(chan verdict, 1)})
	}
	// The bound is the caller's: a credential whose every request is a
	// session of its own (2026-07-28 over HTTP without Mcp-Session-Id)
	// is held to it as one session is.
	for i := range maxPendingPerSession {
		if err := add("credential c"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := add("credential c"); err == nil || !strings.Contains(err.Error(), "of this session") {
		t.Errorf("over the session's bound: %v", err)
	}
	for i := maxPendingPerSession; i < maxPending; i++ {
		if err := add(fmt.Sprint("s", i)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := add("other"); err == nil || !strings.Contains(err.Error(), "wait for approval already") {
		t.Errorf("over the bound: %v", err)
	}
	// A grant past maxGrants pushes out the oldest.
	a = New(Options{Logger: testLogger()})
	for i := range maxGrants {
		a.grants = append(a.grants, &grant{Grant: approval.Grant{ID: fmt.Sprint("old-", i)}})
	}
	p := &pendingCall{Pending: approval.Pending{ID: "p", Session: "s", Tool: "t"}, name: "t", answer: make(chan verdict, 1)}
	if err := a.add(p); err != nil {
		t.Fatal(err)
	}
	g, err := a.Approve("p", "ui", approval.Options{Calls: 3})
	if err != nil {
		t.Fatal(err)
	}
	l := a.list()
	if len(l.Grants) != maxGrants || l.Grants[0].ID != "old-1" || l.Grants[maxGrants-1].ID != g.ID {
		t.Errorf("%d grants, first %s, last %s", len(l.Grants), l.Grants[0].ID, l.Grants[len(l.Grants)-1].ID)
	}
	if v := <-p.answer; !v.ok || v.grant != g.ID {
		t.Errorf("verdict %+v", v)
	}
	// A grant keeps no name over maxGrantName (a URI may be megabytes).
	long := strings.Repeat("x", maxGrantName+1)
	p = &pendingCall{Pending: approval.Pending{ID: "q", Session: "s", Tool: clipName(long)}, name: long, answer: make(chan verdict, 1)}
	if err := a.add(p); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Approve("q", "ui", approval.Options{Calls: 3}); err == nil || len(p.Tool) > maxGrantName+len(clippedMark) {
		t.Errorf("a grant for a long name: %v; shown %d bytes", err, len(p.Tool))
	}
	if _, err := a.Approve("q", "ui", approval.Options{}); err != nil {
		t.Errorf("the call alone: %v", err)
	}
	// Names and approvers are cut on a character's boundary: what the
	// inspector and CLI show stays valid UTF-8.
	if got := clipName("x" + strings.Repeat("ж", maxGrantName)); !utf8.ValidString(got) {
		t.Errorf("a cut name is not valid UTF-8: %q", got[len(got)-8:])
	}
	if got := ClipBy("cli:x" + strings.Repeat("é", 40)); !utf8.ValidString(got) {
		t.Errorf("a cut approver is not valid UTF-8: %q", got)
	}
}

// The sessions of one HTTP credential together wait at most
// maxPendingPerCredential calls: past it a new session of that
// credential is denied while another credential's calls, and those of a
// client without one (stdio), still wait; an answer makes room.
func TestApprovalBoundsPerCredential(t *testing.T) {
	a := New(Options{Logger: testLogger()})
	add := func(id, owner, cred string) error {
		return a.add(&pendingCall{Pending: approval.Pending{ID: id}, owner: owner, cred: cred, answer: make(chan verdict, 1)})
	}
	for i := range maxPendingPerCredential {
		if err := add(fmt.Sprint("a-", i), fmt.Sprint("session a-", i/maxPendingPerSession), "alice"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := add("a-more", "session a-new", "alice"); err == nil || !strings.Contains(err.Error(), "of this credential") {
		t.Errorf("over the credential's bound: %v", err)
	}
	if err := add("b-1", "session b-1", "bob"); err != nil {
		t.Errorf("another credential: %v", err)
	}
	for i := range maxPendingPerSession {
		if err := add(fmt.Sprint("s-", i), fmt.Sprint("session s-", i%2), ""); err != nil {
			t.Errorf("a client without a credential: %v", err)
		}
	}
	if _, err := a.decide("a-0", verdict{}); err != nil {
		t.Fatal(err)
	}
	if err := add("a-more", "session a-new", "alice"); err != nil {
		t.Errorf("after an answer: %v", err)
	}
}

// A grant names the server whose tool it lets through: a tool of the same
// name that another server of the group serves still asks, and a waiting
// call of that other server is not released by it.
func TestApprovalGrantNamesServer(t *testing.T) {
	a := New(Options{Logger: testLogger()})
	pend := func(id, server string) *pendingCall {
		p := &pendingCall{Pending: approval.Pending{ID: id, Method: "tools/call", Tool: "echo", Group: "g", Server: server},
			owner: "session s", name: "echo", answer: make(chan verdict, 1)}
		if err := a.add(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pend("p1", "one")
	other := pend("p2", "two")
	g, err := a.Approve("p1", "ui", approval.Options{For: approval.Duration(time.Minute)})
	if err != nil || g.Server != "one" {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if l := a.list(); len(l.Pending) != 1 || l.Pending[0].ID != "p2" || len(other.answer) != 0 {
		t.Errorf("the other server's call was released by the grant: %+v", l.Pending)
	}
	if _, _, ok := a.use("session s", "g", "two", "tools/call", "echo", nil); ok {
		t.Error("the grant covers another server's tool of the same name")
	}
	if id, _, ok := a.use("session s", "g", "one", "tools/call", "echo", nil); !ok || id != g.ID {
		t.Error("the grant does not cover its own server's tool")
	}
}
