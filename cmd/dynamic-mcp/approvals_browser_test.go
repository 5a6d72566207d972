package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The acceptance, in a real browser: a client that declares no
// elicitation calls a tool a prompt rule guards; the inspector's page
// shows the call live, arguments redacted, under Approvals; Approve with
// a grant for a minute completes it, and the grant is listed and lets the
// next call through; Revoke removes it, the next call asks again, and
// Deny answers it -32001 "denied by ui".
func TestApprovalInboxInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browse(t)
	base, stderr := startHTTPHub(t, inboxConfig(filepath.Join(t.TempDir(), "audit.jsonl")))
	c := httpClient(t, base, nil)
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	token := uiToken(t, stderr)
	browserDo(t, ctx, "open /ui and give the token",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), token),
		chromedp.Click(css("#login-form button")),
		chromedp.WaitVisible(css("#conn.live")),
		chromedp.Click(css(`#tabs button[data-tab="approvals"]`)),
		chromedp.WaitVisible(css("#pending-empty")),
	)

	first := make(chan callResult, 1)
	go func() {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "from the browser test", "api_key": "sk-live-123456"}})
		first <- callResult{res, rpcErr}
	}()
	row := `#pending tr.approval`
	browserDo(t, ctx, "wait for the pending call", chromedp.WaitVisible(css(row)))
	text := browserGet(t, ctx, "read the pending call", chromedp.Text(css(row)))
	for _, want := range []string{"echo", "f / f", "dynamic-mcp-test", "from the browser test", "[redacted]", "ask-echo"} {
		if !strings.Contains(text, want) {
			t.Errorf("the pending row lacks %q: %s", want, text)
		}
	}
	if strings.Contains(text, "sk-live") {
		t.Errorf("the api_key is shown: %s", text)
	}
	if n := browserGet(t, ctx, "read the tab's count", chromedp.Text(css("#count-approvals"))); n != "1" {
		t.Errorf("the Approvals tab counts %q", n)
	}
	browserDo(t, ctx, "approve for a minute",
		chromedp.SetValue(css(row+" select.scope"), "1m"),
		chromedp.Click(css(row+" button.approve")),
		chromedp.WaitNotPresent(css(row)),
		chromedp.WaitVisible(css("#grants tr.grant")),
	)
	if r := waitResult(t, first); r.rpcErr != nil || !strings.Contains(string(r.res), "from the browser test") {
		t.Errorf("the approved call: %s %+v", r.res, r.rpcErr)
	}
	grant := browserGet(t, ctx, "read the grant", chromedp.Text(css("#grants tr.grant")))
	if !strings.Contains(grant, "echo") || !strings.Contains(grant, "f / f") || !strings.Contains(grant, "ui") || !strings.Contains(grant, "until") {
		t.Errorf("the grant row: %s", grant)
	}
	if r := waitResult(t, callAsync(c, "under the grant")); r.rpcErr != nil {
		t.Errorf("the call under the grant: %+v", r.rpcErr)
	}

	// Clicked in the page in one step: a poll may redraw the row (its
	// use count changed) between finding the button and clicking it.
	browserDo(t, ctx, "wait for Revoke", chromedp.WaitVisible(css("#grants tr.grant button.revoke")))
	if !browserGet(t, ctx, "revoke the grant", chromedp.Evaluate[bool](
		`(() => { const b = document.querySelector('#grants tr.grant button.revoke'); if (!b) return false; b.click(); return true })()`)) {
		t.Error("no Revoke button to click")
	}
	browserDo(t, ctx, "wait for the grant to go", chromedp.WaitNotPresent(css("#grants tr.grant")))
	// Its arguments over the inbox's 4 KiB: the row says they are cut,
	// and their whole size ({"text":"..."}).
	long := strings.Repeat("y", 5000)
	denied := callAsync(c, long)
	browserDo(t, ctx, "wait for the next call", chromedp.WaitVisible(css(row)))
	if text := browserGet(t, ctx, "read its arguments", chromedp.Text(css(row+" td.args"))); !strings.Contains(text, fmt.Sprintf("(cut, %d bytes)", len(long)+11)) {
		t.Errorf("the cut arguments' row: %.100s...%s", text, text[max(len(text)-60, 0):])
	}
	browserDo(t, ctx, "deny the next call",
		chromedp.Click(css(row+" button.deny")),
		chromedp.WaitNotPresent(css(row)),
	)
	if r := waitResult(t, denied); r.rpcErr == nil || r.rpcErr.Code != -32001 || !strings.Contains(r.rpcErr.Message, "denied by ui") {
		t.Errorf("the denied call: %s %+v", r.res, r.rpcErr)
	}
}
