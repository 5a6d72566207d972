package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// inboxConfig is a flat hub in front of the fake upstream whose echo tool
// a prompt rule guards, its audit trail at audit.
func inboxConfig(audit string) string {
	return fmt.Sprintf(`mode: flat
audit: { path: %q }
settings: { prompt_timeout: 30s }
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a person" }
`, audit, fakeBin)
}

// callResult is the answer to a call made in the background.
type callResult struct {
	res    json.RawMessage
	rpcErr *mcp.JSONRPCErrorDetails
}

// callAsync calls f__echo in the background.
func callAsync(c *client, text string) chan callResult {
	done := make(chan callResult, 1)
	go func() {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": text}})
		done <- callResult{res, rpcErr}
	}()
	return done
}

func waitResult(t *testing.T, done chan callResult) callResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the call was not answered")
		return callResult{}
	}
}

// auditRecordN is the n-th record of the audit trail at path, once there.
func auditRecordN(t *testing.T, path string, n int) map[string]any {
	t.Helper()
	var lines []string
	await.Costly(t, 10*time.Second, fmt.Sprintf("%d audit records", n), func() bool {
		b, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(b) > 0 && len(lines) >= n
	})
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[n-1]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// The acceptance, over HTTP: a client that declares no
// elicitation calls a tool a prompt rule guards; the call shows in the
// inspector's API, behind the inspector's own token (401 without it, or
// with an MCP token); approving it with a grant for a minute lets it and
// the next call through, the audit naming the grant and "ui"; revoking
// the grant asks again, and denying answers -32001 "denied by ui".
func TestApprovalInboxOverHTTP(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	base, stderr := startHTTPHub(t, inboxConfig(audit))
	ui := uiToken(t, stderr)
	c := httpClient(t, base, nil)
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)

	api := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+"/ui/api/"+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	pending := func() approval.Pending {
		t.Helper()
		var l approval.List
		await.Costly(t, 10*time.Second, "a pending approval", func() bool {
			code, b := api("GET", "approvals", ui, "")
			return code == 200 && json.Unmarshal(b, &l) == nil && len(l.Pending) == 1
		})
		return l.Pending[0]
	}

	first := callAsync(c, "one")
	p := pending()
	if p.Tool != "echo" || p.Group != "f" || p.Rule != "ask-echo" || p.Client != "dynamic-mcp-test" || !strings.Contains(string(p.Arguments), "one") {
		t.Errorf("pending: %+v", p)
	}
	for _, token := range []string{"", testToken} {
		if code, _ := api("GET", "approvals", token, ""); code != http.StatusUnauthorized {
			t.Errorf("list with token %q: %d, want 401", token, code)
		}
		if code, _ := api("POST", "approvals/"+p.ID+"/approve", token, ""); code != http.StatusUnauthorized {
			t.Errorf("approve with token %q: %d, want 401", token, code)
		}
	}
	code, b := api("POST", "approvals/"+p.ID+"/approve", ui, `{"for":"1m"}`)
	var approved struct{ Grant approval.Grant }
	if code != 200 || json.Unmarshal(b, &approved) != nil || approved.Grant.ID == "" {
		t.Fatalf("approve: %d %s", code, b)
	}
	if r := waitResult(t, first); r.rpcErr != nil || !strings.Contains(string(r.res), "one") {
		t.Errorf("approved call: %s %+v", r.res, r.rpcErr)
	}
	if r := waitResult(t, callAsync(c, "two")); r.rpcErr != nil || !strings.Contains(string(r.res), "two") {
		t.Errorf("the call under the grant: %s %+v", r.res, r.rpcErr)
	}
	for n := 1; n <= 2; n++ {
		if rec := auditRecordN(t, audit, n); rec["grant"] != approved.Grant.ID || rec["approved_by"] != "ui" || rec["outcome"] != "ok" {
			t.Errorf("audit record %d: %v", n, rec)
		}
	}

	if code, b := api("POST", "grants/"+approved.Grant.ID+"/revoke", ui, ""); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, b)
	}
	third := callAsync(c, "three")
	p = pending()
	if code, b := api("POST", "approvals/"+p.ID+"/deny", ui, ""); code != http.StatusNoContent {
		t.Fatalf("deny: %d %s", code, b)
	}
	if r := waitResult(t, third); r.rpcErr == nil || r.rpcErr.Code != -32001 || !strings.Contains(r.rpcErr.Message, "denied by ui") {
		t.Errorf("denied call: %s %+v", r.res, r.rpcErr)
	}
}
