package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inflight"
)

// One caller's sessions together hold at most the caller's budget of
// bytes in flight, and the hub's sessions at most the hub's: past them a
// request is refused at once (-32000, saying why) while the calls in
// flight go on; a small request of another session still fits, and a
// request of another caller finds its own budget. (Budgets scaled down:
// 2.5 MiB a caller, 3.5 MiB in all.)
func TestBytesInFlightPerCallerAndInAll(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	// call_timeout far beyond the test: the hung calls must still be in
	// flight when the checks below run, however slow the machine.
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__hang"]; return ok })
	h.inflight = inflight.New(5<<19, 7<<19)
	a, b := servePipes(t, h, StdioOptions{}), servePipes(t, h, StdioOptions{SessionID: "b"})
	for _, c := range []*pipeClient{a, b} {
		c.send(initializeMsg)
		c.answer("0")
	}
	pad := strings.Repeat("x", 1<<20)
	// Calls that never end by themselves (f__hang): refused "at once"
	// is while they are in flight, not a time that a busy machine could
	// exceed; a request that waited for their bytes would wait for ever.
	hang := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__hang","arguments":{"pad":"%s"}}}`, id, pad)
	}
	a.send(hang(1))
	a.send(hang(2))
	await.For(t, 10*time.Second, "two calls of 1 MiB in flight", func() bool { return h.inflight.Held("") > 2<<20 })
	b.send(hang(3)) // another session of the same caller: over the caller's budget
	if got := b.answer("3"); !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, "this caller's") {
		t.Errorf("a third 1 MiB call of the caller: %.300s", got)
	}
	b.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if got := b.answer("4"); !strings.Contains(got, `"result"`) {
		t.Errorf("a ping of another session: %.300s", got)
	}
	// Another caller: its own budget, and the hub's room left (1.5 MiB).
	other := h.Inflight().Admit("someone else")
	release, refuse := other(1 << 20)
	if refuse != nil {
		t.Fatalf("another caller's 1 MiB: %v", refuse)
	}
	if _, refuse := other(1 << 20); refuse == nil || !strings.Contains(refuse.Message, "the hub's") {
		t.Errorf("another caller's second 1 MiB, over the hub's budget: %v", refuse)
	}
	release()
	if held := h.inflight.Held(""); held <= 2<<20 {
		t.Errorf("the calls in flight hold %d bytes, want their 2 MiB still", held)
	}
	for _, id := range []string{"1", "2"} {
		a.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`)
	}
	await.For(t, 5*time.Second, "the budget given back", func() bool { return h.inflight.Held("") == 0 })
}

// The approval inbox holds at most 32 MiB of arguments of one caller's
// waiting calls: past that a call is refused at once, saying why, and
// one that fits still waits (64 calls of 8 MiB held 1.3 GB). Bounds
// scaled down to 32 KiB a caller, 64 KiB in all: kilobytes show the
// bound as megabytes do, which took tens of seconds to send under -race.
func TestApprovalInboxBytesBounded(t *testing.T) {
	t.Parallel()
	// No call may expire while the test runs.
	h := inboxHub(t, "off", "prompt_timeout: 10m", "")
	h.Inbox().SetByteBounds(64<<10, 32<<10)
	c := inboxClient(t, h)
	pad := strings.Repeat("y", 6<<10)
	for i := range 5 { // 30 KiB waiting
		c.send(inboxCall(10+i, `{"text":"`+pad+`"}`))
	}
	await.For(t, 10*time.Second, "five calls in the inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 5 })
	c.send(inboxCall(20, `{"text":"`+pad+`"}`))
	if got := c.answer("20"); !strings.Contains(got, "of arguments already") || !strings.Contains(got, "at most 32 KiB") {
		t.Errorf("a sixth call of 6 KiB: %.300s", got)
	}
	c.send(inboxCall(21, `{"text":"small"}`))
	await.For(t, 10*time.Second, "a small call in the inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 6 })
}
