package mcphttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A 2026-07-28 client over HTTP that sends no Mcp-Session-Id gets a
// session for each request: a rate: rule per session counts its calls by
// its credential instead, so the 2nd call of a 1/minute rule is refused
// as it would be in one session.
func TestStatelessRequestsShareTheirRateLimit(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s, stop_grace: 1s",
		"    policy:\n      - {name: once, action: allow, tool: echo, rate: 1/minute}\n"), nil)
	_, ts := serveHTTP(t, h)
	call := func(id string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "f__echo")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := call("1"); !strings.Contains(got, `"text":"hi"`) {
		t.Fatalf("the first call: %s", got)
	}
	if got := call("2"); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, `"retryAfter":60`) {
		t.Errorf("the second call within the minute, without a session: %s", got)
	}
}
