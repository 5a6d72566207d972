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

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// inboxYAML is the config of a flat-mode hub in front of the fake upstream
// whose echo tool a prompt rule guards, its audit trail at audit, with
// settings (the inside of settings: {...}) and a clients: block (YAML, ""
// for none). A test whose calls wait for a person it plays gives
// prompt_timeout: 10m: no call may expire while it runs (20 s did, for a
// test run beside others on a busy machine).
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
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	return h
}

// inboxClient is a client session that declares no elicitation.
func inboxClient(t *testing.T, h *Hub) *pipeClient {
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	return c
}

func inboxCall(id int, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":%s}}`, id, args)
}

// pendingOne waits until one call waits in h's inbox and returns it.
func pendingOne(t *testing.T, h *Hub) approval.Pending {
	t.Helper()
	var l approval.List
	await.For(t, 5*time.Second, "a pending approval", func() bool { l = h.Inbox().Approvals(); return len(l.Pending) == 1 })
	return l.Pending[0]
}

// lastAudit is the audit trail's last record once it has n.
func lastAudit(t *testing.T, path string, n int) auditRecord {
	t.Helper()
	var lines []string
	await.For(t, 5*time.Second, fmt.Sprintf("%d audit records", n), func() bool {
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
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h := inboxHub(t, audit, "prompt_timeout: 10m", "")
	var skew atomic.Int64 // the grants' clock runs ahead by this
	h.Inbox().SetClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
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
	if _, err := h.Inbox().Approve(p.ID, "test", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "isError") {
		t.Errorf("approved: %s", got)
	}
	if rec := audited(); rec.ApprovedBy != "test" || rec.Grant != "" || rec.Outcome != "ok" {
		t.Errorf("audit of a call approved once: %+v", rec)
	}
	if _, err := h.Inbox().Approve(p.ID, "test", approval.Options{}); err != approval.ErrNoPending {
		t.Errorf("approved twice: %v", err)
	}

	c.send(inboxCall(2, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if err := h.Inbox().Deny(p.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "denied by ui") || !strings.Contains(got, "echo needs a person") {
		t.Errorf("denied: %s", got)
	}
	audited()

	// A grant for one minute.
	c.send(inboxCall(3, `{"text":"hi"}`))
	p = pendingOne(t, h)
	g, err := h.Inbox().Approve(p.ID, "cli:ada", approval.Options{For: approval.Duration(time.Minute)})
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
	if l := h.Inbox().Approvals(); len(l.Pending) != 0 || len(l.Grants) != 1 || l.Grants[0].Used != 4 {
		t.Errorf("the inbox under the grant: %+v", l)
	}

	// Past the minute it asks again.
	skew.Store(int64(61 * time.Second))
	c.send(inboxCall(7, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if l := h.Inbox().Approvals(); len(l.Grants) != 0 {
		t.Errorf("an expired grant listed: %+v", l.Grants)
	}
	sg, err := h.Inbox().Approve(p.ID, "ui", approval.Options{Session: true})
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
	if err := h.Inbox().Revoke(sg.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if err := h.Inbox().Revoke(sg.ID, "ui"); err != approval.ErrNoGrant {
		t.Errorf("revoked twice: %v", err)
	}
	c.send(inboxCall(9, `{"text":"hi"}`))
	pendingOne(t, h)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	await.For(t, 5*time.Second, "the cancelled call to leave the inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 0 })
}

// A grant narrowed to an argument pattern lets through only the calls
// whose arguments match it; one for N calls runs out; approving with a
// grant releases the calls it covers that wait already.
func TestApprovalGrantScope(t *testing.T) {
	t.Parallel()
	h := inboxHub(t, "off", "prompt_timeout: 10m", "")
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"/tmp/a"}`))
	p := pendingOne(t, h)
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{Args: map[string]string{"text": "/tmp/**"}}); err == nil || !strings.Contains(err.Error(), "narrows a grant") {
		t.Errorf("args without a grant to narrow: %v", err)
	}
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{Calls: 1, Args: map[string]string{"text": "/etc/**"}}); err == nil {
		t.Error("a grant whose args do not match the call approved")
	}
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{Calls: 2, Args: map[string]string{"text": "/tmp/**"}}); err != nil {
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
	if l := h.Inbox().Approvals(); len(l.Grants) != 0 || len(l.Pending) != 1 {
		t.Errorf("after its calls the grant is gone, the other call waits: %+v", l)
	}
	c.send(inboxCall(5, `{"text":"/etc/group"}`))
	await.For(t, 5*time.Second, "two waiting", func() bool { return len(h.Inbox().Approvals().Pending) == 2 })
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
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
	t.Parallel()
	h := inboxHub(t, "off", "prompt_timeout: 300ms", "")
	c := inboxClient(t, h)
	c.send(inboxCall(1, `{"text":"hi"}`))
	if got := c.answer("1"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "no answer within 300ms") {
		t.Errorf("timed out: %s", got)
	}
	if l := h.Inbox().Approvals(); len(l.Pending) != 0 {
		t.Errorf("a timed-out call still waits: %+v", l)
	}
}

// A client that declares elicitation but that a clients: rule marks
// approvals: inbox (Codex declines every elicitation itself) is not
// asked: its call goes to the inbox.
func TestApprovalInboxForMarkedClient(t *testing.T) {
	t.Parallel()
	h := inboxHub(t, "off", "prompt_timeout: 10m", "clients:\n  - {match: \"codex*\", approvals: inbox}")
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"codex-mcp-client","version":"1"}}}`)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(inboxCall(1, `{"text":"hi"}`))
	p := pendingOne(t, h)
	if p.Client != "codex-mcp-client" {
		t.Errorf("pending %+v", p)
	}
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("1"); !strings.Contains(got, `"result"`) || strings.Contains(got, "elicitation/create") {
		t.Errorf("approved in the inbox: %s", got)
	}
	// A 2026-07-28 client so marked is not asked in an input_required
	// round either.
	c.send(strings.Replace(modernCall("2", "f__echo", `{"elicitation":{}}`), `"name":"modern"`, `"name":"codex-mcp-client"`, 1))
	p = pendingOne(t, h)
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"result"`) || strings.Contains(got, "input_required") {
		t.Errorf("a 2026-07-28 client, approved in the inbox: %s", got)
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
	await.For(t, 5*time.Second, "the notification", func() bool { got, _ = os.ReadFile(out); return len(got) > 0 })
	if !strings.Contains(string(got), "approve echo?") || !strings.Contains(string(got), p.ID) {
		t.Errorf("notified: %s", got)
	}
	if err := h.Inbox().Deny(p.ID, "test"); err != nil {
		t.Fatal(err)
	}
	c.answer("1")
}

// A config reload keeps the calls waiting and the grants: they live on
// the hub, not in the config's snapshot.
func TestApprovalsSurviveReload(t *testing.T) {
	t.Parallel()
	h := inboxHub(t, "off", "prompt_timeout: 10m", "")
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
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
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
	t.Parallel()
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
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
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
	if err := h.Inbox().Deny(p.ID, "ui"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("2"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "Rate limit 1/minute") || !strings.Contains(got, "denied by ui") {
		t.Errorf("denied over the rate: %s", got)
	}
	c.send(inboxCall(3, `{"text":"hi"}`))
	p = pendingOne(t, h)
	if _, err := h.Inbox().Approve(p.ID, "ui", approval.Options{For: approval.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	c.answer("3")
	c.send(inboxCall(4, `{"text":"hi"}`))
	if got := c.answer("4"); !strings.Contains(got, `"result"`) {
		t.Errorf("over the rate, under the grant: %s", got)
	}
}

// A pending call shows its arguments cut at maxApprovalArgs: it says so
// (Clipped) and gives the whole arguments' size; a call whose arguments
// fit is not marked.
func TestApprovalClippedArguments(t *testing.T) {
	t.Parallel()
	const maxApprovalArgs = 4 << 10 // approve's
	h := inboxHub(t, "off", "prompt_timeout: 10m", "")
	c := inboxClient(t, h)
	for i, args := range []string{`{"text":"hi"}`, `{"text":"` + strings.Repeat("x", 2*maxApprovalArgs) + `"}`} {
		c.send(inboxCall(i+1, args))
		p := pendingOne(t, h)
		if clipped := len(args) > maxApprovalArgs; p.Clipped != clipped || p.ArgumentsSize != len(args) ||
			len(p.Arguments) > maxApprovalArgs+64 {
			t.Errorf("arguments of %d bytes: clipped %v, size %d, shown %d bytes", len(args), p.Clipped, p.ArgumentsSize, len(p.Arguments))
		}
		if err := h.Inbox().Deny(p.ID, "test"); err != nil {
			t.Fatal(err)
		}
		c.answer(fmt.Sprint(i + 1))
	}
}
