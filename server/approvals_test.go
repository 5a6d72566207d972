package server

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// inboxYAML is the config of a flat-mode hub in front of the fake upstream
// whose echo tool a prompt rule guards, its audit trail at audit, with
// settings (the inside of settings: {...}) and a clients: block (YAML, ""
// for none).
func inboxYAML(stateDir, audit, settings, clients string) string {
	return fmt.Sprintf(`mode: flat
state_dir: %q
audit: {path: %q}
settings: {call_timeout: 5s, %s}
%s
groups:
  f:
    description: fake
    command: %q
    policy:
      - {name: writes, action: prompt, tool: "echo", description: "echo needs a person"}
      - {action: allow, tool: "*"}
`, stateDir, audit, settings, clients, fakeBin)
}

// inboxHub runs the hub of inboxYAML, ready to serve.
func inboxHub(t *testing.T, audit, settings, clients string) *Hub {
	t.Helper()
	h, mgr := runHub(t, inboxYAML(t.TempDir(), audit, settings, clients), true)
	waitFor(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	waitFor(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.flatRoutes["f__echo"]; return ok })
	return h
}

// inboxClient is a client session that declares no elicitation.
func inboxClient(t *testing.T, h *Hub) *pipeClient {
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func inboxCall(id int, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":%s}}`, id, args)
}

// pendingOne waits until one call waits in h's inbox and returns it.
func pendingOne(t *testing.T, h *Hub) approval.Pending {
	t.Helper()
	var l approval.List
	waitFor(t, 5*time.Second, "a pending approval", func() bool { l = h.Approvals(); return len(l.Pending) == 1 })
	return l.Pending[0]
}

// lastAudit is the audit trail's last record once it has n.
func lastAudit(t *testing.T, path string, n int) auditRecord {
	t.Helper()
	var lines []string
	waitFor(t, 5*time.Second, fmt.Sprintf("%d audit records", n), func() bool {
		b, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(b) > 0 && len(lines) >= n
	})
	var rec auditRecord
	mustJSON(t, lines[n-1], &rec)
	return rec
}

// With a client that declares no elicitation, a prompt rule's call waits
// in the inbox with what a person needs to judge it, secrets redacted;
// approve lets it complete, deny answers -32001 with who denied it; a
// grant for a minute lets the next calls through without asking, and the
// audit names the grant and who approved it; past the minute, and after a
// session grant is revoked, calls ask again; a call the client cancels
// leaves the inbox.
func TestApprovalInbox(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h := inboxHub(t, audit, "prompt_timeout: 20s", "")
	var skew atomic.Int64 // the grants' clock runs ahead by this
	h.approvals.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	c := inboxClient(t, h)
	records := 0
	audited := func() auditRecord { records++; return lastAudit(t, audit, records) }

	c.send(inboxCall(1, `{"text":"hi","api_key":"sk-live-123456"}`))
	p := pendingOne(t, h)
	if p.Tool != "echo" || p.Group != "f" || p.Server != "f" || p.Method != "tools/call" || p.Client != "t" ||
		p.Rule != "writes" || p.Description != "echo needs a person" || p.Session == "" || len(p.ID) < 10 {
		t.Errorf("pending: %+v", p)
	}
	if args := string(p.Arguments); !strings.Contains(args, `"text":"hi"`) || strings.Contains(args, "sk-live") {
		t.Errorf("pending arguments, secrets redacted: %s", args)
	}
	if _, err := h.Approve(p.ID, "test", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "isError") {
		t.Errorf("approved: %s", got)
	}
	if rec := audited(); rec.ApprovedBy != "test" || rec.Grant != "" || rec.Outcome != "ok" {
		t.Errorf("audit of a call approved once: %+v", rec)
	}
	if _, err := h.Approve(p.ID, "test", approval.Options{}); err != approval.ErrNoPending {
		t.Errorf("approved twice: %v", err)
	}

	c.send(inboxCall(2, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if err := h.Deny(p.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "denied by ui") || !strings.Contains(got, "echo needs a person") {
		t.Errorf("denied: %s", got)
	}
	audited()

	// A grant for one minute.
	c.send(inboxCall(3, `{"text":"hi"}`))
	p = pendingOne(t, h)
	g, err := h.Approve(p.ID, "cli:ada", approval.Options{For: approval.Duration(time.Minute)})
	if err != nil || g == nil || g.Tool != "echo" || g.Group != "f" || g.Expires.IsZero() {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if got := c.answer("3"); !strings.Contains(got, `"result"`) {
		t.Errorf("approved with a grant: %s", got)
	}
	if rec := audited(); rec.Grant != g.ID || rec.ApprovedBy != "cli:ada" {
		t.Errorf("audit of the approved call: %+v", rec)
	}
	for id := 4; id <= 6; id++ {
		c.send(inboxCall(id, `{"text":"again"}`))
		if got := c.answer(fmt.Sprint(id)); !strings.Contains(got, `"result"`) || strings.Contains(got, "error") {
			t.Errorf("call %d under the grant: %s", id, got)
		}
		if rec := audited(); rec.Grant != g.ID || rec.ApprovedBy != "cli:ada" || rec.Decision != "prompt" {
			t.Errorf("audit of a call under the grant: %+v", rec)
		}
	}
	if l := h.Approvals(); len(l.Pending) != 0 || len(l.Grants) != 1 || l.Grants[0].Used != 4 {
		t.Errorf("the inbox under the grant: %+v", l)
	}

	// Past the minute it asks again.
	skew.Store(int64(61 * time.Second))
	c.send(inboxCall(7, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if l := h.Approvals(); len(l.Grants) != 0 {
		t.Errorf("an expired grant listed: %+v", l.Grants)
	}
	sg, err := h.Approve(p.ID, "ui", approval.Options{Session: true})
	if err != nil || sg.Session == "" {
		t.Fatalf("session grant %+v, %v", sg, err)
	}
	c.answer("7")
	audited()
	c.send(inboxCall(8, `{"text":"hi"}`))
	if got := c.answer("8"); !strings.Contains(got, `"result"`) {
		t.Errorf("under the session grant: %s", got)
	}
	audited()

	// A revoked grant asks again; a cancelled call leaves the inbox.
	if err := h.Revoke(sg.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if err := h.Revoke(sg.ID, "ui"); err != approval.ErrNoGrant {
		t.Errorf("revoked twice: %v", err)
	}
	c.send(inboxCall(9, `{"text":"hi"}`))
	pendingOne(t, h)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	waitFor(t, 5*time.Second, "the cancelled call to leave the inbox", func() bool { return len(h.Approvals().Pending) == 0 })
}

// A grant narrowed to an argument pattern lets through only the calls
// whose arguments match it; one for N calls runs out; approving with a
// grant releases the calls it covers that wait already.
func TestApprovalGrantScope(t *testing.T) {
	h := inboxHub(t, "off", "prompt_timeout: 20s", "")
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"/tmp/a"}`))
	p := pendingOne(t, h)
	if _, err := h.Approve(p.ID, "ui", approval.Options{Args: map[string]string{"text": "/tmp/**"}}); err == nil || !strings.Contains(err.Error(), "narrows a grant") {
		t.Errorf("args without a grant to narrow: %v", err)
	}
	if _, err := h.Approve(p.ID, "ui", approval.Options{Calls: 1, Args: map[string]string{"text": "/etc/**"}}); err == nil {
		t.Error("a grant whose args do not match the call approved")
	}
	if _, err := h.Approve(p.ID, "ui", approval.Options{Calls: 2, Args: map[string]string{"text": "/tmp/**"}}); err != nil {
		t.Fatal(err)
	}
	c.answer("1")
	c.send(inboxCall(2, `{"text":"/etc/passwd"}`))
	p = pendingOne(t, h)
	c.send(inboxCall(3, `{"text":"/tmp/b"}`))
	if got := c.answer("3"); !strings.Contains(got, `"result"`) {
		t.Errorf("a matching call under the grant: %s", got)
	}
	c.send(inboxCall(4, `{"text":"/tmp/c"}`))
	if got := c.answer("4"); !strings.Contains(got, `"result"`) {
		t.Errorf("the grant's second call: %s", got)
	}
	if l := h.Approvals(); len(l.Grants) != 0 || len(l.Pending) != 1 {
		t.Errorf("after its calls the grant is gone, the other call waits: %+v", l)
	}
	c.send(inboxCall(5, `{"text":"/etc/group"}`))
	waitFor(t, 5*time.Second, "two waiting", func() bool { return len(h.Approvals().Pending) == 2 })
	if _, err := h.Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, _ := c.answersAt(time.Now(), "2", "5") // in either order
	for id, line := range got {
		if !strings.Contains(line, `"result"`) {
			t.Errorf("call %s released by the grant: %s", id, line)
		}
	}
}

// No answer within settings.prompt_timeout denies the call, saying so.
func TestApprovalTimeout(t *testing.T) {
	h := inboxHub(t, "off", "prompt_timeout: 300ms", "")
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"hi"}`))
	if got := c.answer("1"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "no answer within 300ms") {
		t.Errorf("timed out: %s", got)
	}
	if l := h.Approvals(); len(l.Pending) != 0 {
		t.Errorf("a timed-out call still waits: %+v", l)
	}
}

// A client that declares elicitation but that a clients: rule marks
// approvals: inbox (Codex declines every elicitation itself) is not
// asked: its call goes to the inbox.
func TestApprovalInboxForMarkedClient(t *testing.T) {
	h := inboxHub(t, "off", "prompt_timeout: 20s", "clients:\n  - {match: \"codex*\", approvals: inbox}")
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"codex-mcp-client","version":"1"}}}`)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, h)
	if p.Client != "codex-mcp-client" {
		t.Errorf("pending %+v", p)
	}
	if _, err := h.Approve(p.ID, "ui", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "elicitation/create") {
		t.Errorf("approved in the inbox: %s", got)
	}
	// A 2026-07-28 client so marked is not asked in an input_required
	// round either.
	c.send(strings.Replace(modernCall("2", "f__echo", `{"elicitation":{}}`), `"name":"modern"`, `"name":"codex-mcp-client"`, 1))
	p = pendingOne(t, h)
	if _, err := h.Approve(p.ID, "ui", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"result"`) || strings.Contains(got, "input_required") {
		t.Errorf("a 2026-07-28 client, approved in the inbox: %s", got)
	}
}

// The inbox is bounded per session and in all: a call over a bound is
// denied at once, saying why.
func TestApprovalBounds(t *testing.T) {
	a := newApprovals()
	add := func(owner string) error {
		return a.add(&pendingCall{Pending: approval.Pending{ID: newID(""), Session: newID("")}, owner: owner, answer: make(chan verdict, 1)})
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
	a = newApprovals()
	h := &Hub{approvals: a, logger: testLogger()}
	for i := range maxGrants {
		a.grants = append(a.grants, &grant{Grant: approval.Grant{ID: fmt.Sprint("old-", i)}})
	}
	p := &pendingCall{Pending: approval.Pending{ID: "p", Session: "s", Tool: "t"}, name: "t", answer: make(chan verdict, 1)}
	if err := a.add(p); err != nil {
		t.Fatal(err)
	}
	g, err := h.Approve("p", "ui", approval.Options{Calls: 3})
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
	if _, err := h.Approve("q", "ui", approval.Options{Calls: 3}); err == nil || len(p.Tool) > maxGrantName+len(clippedMark) {
		t.Errorf("a grant for a long name: %v; shown %d bytes", err, len(p.Tool))
	}
	if _, err := h.Approve("q", "ui", approval.Options{}); err != nil {
		t.Errorf("the call alone: %v", err)
	}
	// Names and approvers are cut on a character's boundary: what the
	// inspector and CLI show stays valid UTF-8.
	if got := clipName("x" + strings.Repeat("ж", maxGrantName)); !utf8.ValidString(got) {
		t.Errorf("a cut name is not valid UTF-8: %q", got[len(got)-8:])
	}
	if got := clipBy("cli:x" + strings.Repeat("é", 40)); !utf8.ValidString(got) {
		t.Errorf("a cut approver is not valid UTF-8: %q", got)
	}
}

// With settings.notify, a call that comes to the inbox shows a desktop
// notification (notify-send on Linux) naming the tool and the approval's
// id; the call waits all the same.
func TestApprovalNotifies(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("notify-send is the Linux notifier")
	}
	bin, out := t.TempDir(), filepath.Join(t.TempDir(), "notified")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + out + ".tmp && mv " + out + ".tmp " + out + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := inboxHub(t, "off", "prompt_timeout: 20s, notify: true", "")
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, h)
	var got []byte
	waitFor(t, 5*time.Second, "the notification", func() bool { got, _ = os.ReadFile(out); return len(got) > 0 })
	if !strings.Contains(string(got), "approve echo?") || !strings.Contains(string(got), p.ID) {
		t.Errorf("notified: %s", got)
	}
	if err := h.Deny(p.ID, "test"); err != nil {
		t.Fatal(err)
	}
	c.answer("1")
}

// A config reload keeps the calls waiting and the grants: they live on
// the hub, not in the config's snapshot.
func TestApprovalsSurviveReload(t *testing.T) {
	h := inboxHub(t, "off", "prompt_timeout: 20s", "")
	c := inboxClient(t, h)
	reload := func(settings string) {
		t.Helper()
		cfg, err := config.Parse("test.yaml", strings.NewReader(inboxYAML(t.TempDir(), "off", settings, "")))
		if err != nil {
			t.Fatal(err)
		}
		h.SetConfig(cfg)
	}
	c.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, h)
	reload("prompt_timeout: 30s")
	if _, err := h.Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
		t.Fatalf("approve after a reload: %v", err)
	}
	if got := c.answer("1"); !strings.Contains(got, `"result"`) {
		t.Errorf("approved after a reload: %s", got)
	}
	reload("prompt_timeout: 40s")
	c.send(inboxCall(2, `{"text":"hi"}`))
	if got := c.answer("2"); !strings.Contains(got, `"result"`) {
		t.Errorf("the grant after a reload: %s", got)
	}
}

// A rate: rule's then: prompt, for a client that declares no
// elicitation, goes to the inbox with the limit's message; a grant made
// there lets the loop's next calls through.
func TestApprovalRateThenPrompt(t *testing.T) {
	h, mgr := runHub(t, fmt.Sprintf(`mode: flat
state_dir: %q
audit: {path: "off"}
settings: {call_timeout: 5s, prompt_timeout: 20s}
groups:
  f:
    description: fake
    command: %q
    policy:
      - {name: writes, action: allow, tool: "echo", rate: 1/minute, then: prompt}
`, t.TempDir(), fakeBin), true)
	waitFor(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	waitFor(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.flatRoutes["f__echo"]; return ok })
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"hi"}`))
	if got := c.answer("1"); !strings.Contains(got, `"result"`) {
		t.Fatalf("within the rate: %s", got)
	}
	c.send(inboxCall(2, `{"text":"hi"}`))
	p := pendingOne(t, h)
	if !strings.Contains(p.Description, "Rate limit 1/minute") {
		t.Errorf("pending over the rate: %+v", p)
	}
	if err := h.Deny(p.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "Rate limit 1/minute") || !strings.Contains(got, "denied by ui") {
		t.Errorf("denied over the rate: %s", got)
	}
	c.send(inboxCall(3, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if _, err := h.Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	c.answer("3")
	c.send(inboxCall(4, `{"text":"hi"}`))
	if got := c.answer("4"); !strings.Contains(got, `"result"`) {
		t.Errorf("over the rate, under the grant: %s", got)
	}
}

// The sessions of one HTTP credential together wait at most
// maxPendingPerCredential calls: past it a new session of that
// credential is denied while another credential's calls, and those of a
// client without one (stdio), still wait; an answer makes room.
func TestApprovalBoundsPerCredential(t *testing.T) {
	a := newApprovals()
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
	a := newApprovals()
	h := &Hub{approvals: a, logger: testLogger()}
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
	g, err := h.Approve("p1", "ui", approval.Options{For: approval.Duration(time.Minute)})
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

// A pending call shows its arguments cut at maxApprovalArgs: it says so
// (Clipped) and gives the whole arguments' size; a call whose arguments
// fit is not marked.
func TestApprovalClippedArguments(t *testing.T) {
	h := inboxHub(t, "off", "prompt_timeout: 20s", "")
	c := inboxClient(t, h)
	for i, args := range []string{`{"text":"hi"}`, `{"text":"` + strings.Repeat("x", 2*maxApprovalArgs) + `"}`} {
		c.send(inboxCall(i+1, args))
		p := pendingOne(t, h)
		if clipped := len(args) > maxApprovalArgs; p.Clipped != clipped || p.ArgumentsSize != len(args) ||
			len(p.Arguments) > maxApprovalArgs+64 {
			t.Errorf("arguments of %d bytes: clipped %v, size %d, shown %d bytes", len(args), p.Clipped, p.ArgumentsSize, len(p.Arguments))
		}
		if err := h.Deny(p.ID, "test"); err != nil {
			t.Fatal(err)
		}
		c.answer(fmt.Sprint(i + 1))
	}
}
