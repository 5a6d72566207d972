package mcphttp

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// What a careless or hostile client POSTs (not JSON-RPC, batches,
// answers to requests never sent, requests without a method, params of
// every wrong type, nesting past the limit, repeated keys) is answered at
// once with an error or taken and dropped; none panics the hub, and the
// session goes on.
func TestAttackHostileBodiesAnswered(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	bodies := []string{
		``, ` `, `null`, `"x"`, `1`, `[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{}`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":99,"result":{}}`, `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":1}`, `{"jsonrpc":"2.0","id":1,"method":null}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + deep + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":` + deep + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":[]}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
		"\xff\xfe{", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo\u0000","arguments":{"text":"\ud800"}}}`,
	}
	for i, b := range bodies {
		start := time.Now()
		resp, got := c.post(b)
		if took := time.Since(start); took > 5*time.Second*await.Slow {
			t.Errorf("%d %.80q: answered after %s", i, b, took)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%d %.80q: %d %.300s", i, b, resp.StatusCode, got)
		}
		if n := h.Panics().Count(); n != 0 {
			t.Fatalf("%d %.80q: the hub recovered from %d panics", i, b, n)
		}
	}
	if resp, got := c.post(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"}}}`); resp.StatusCode != http.StatusOK || !strings.Contains(got, "still") {
		t.Fatalf("the session after: %d %s", resp.StatusCode, got)
	}
}
