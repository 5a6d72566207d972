package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A POST's application/json body is the call's answer or nothing: one
// that is not (not JSON, a batch, some other value, the answer to another
// request, a request or a notification, an answer with the call's id
// that is malformed) fails that call at once, with what the body was and
// the upstream's name, long before the call's timeout (10 minutes here:
// the test's ctx would end first). The server is up, so the connection
// stays: the next call on it succeeds, and no new session was begun.
func TestHTTPJSONBodyThatIsNotTheAnswerFailsTheCallAtOnce(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		params := jsonrpc.Field(body, "params")
		if jsonrpc.Field(params, "name") == nil {
			return false
		}
		var kind string
		_ = json.Unmarshal(jsonrpc.Field(jsonrpc.Field(params, "arguments"), "kind"), &kind)
		id := string(jsonrpc.Field(body, "id"))
		answers := map[string]string{
			"not JSON":              `<html>upstream error</html>`,
			"truncated":             `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[`,
			"batch":                 `[{"jsonrpc":"2.0","id":` + id + `,"result":{}}]`,
			"string":                `"ok"`,
			"no id":                 `{"jsonrpc":"2.0","result":{}}`,
			"other id":              `{"jsonrpc":"2.0","id":"other-1","result":{}}`,
			"request":               `{"jsonrpc":"2.0","id":` + id + `,"method":"roots/list"}`,
			"notification":          `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
			"answer without result": `{"jsonrpc":"2.0","id":` + id + `}`,
			"repeated key":          `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[]},"result":{}}`,
		}
		a, ok := answers[kind]
		if !ok {
			return false // the fake's own answer, on an event stream
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(a))
		return true
	}
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })

	for _, tc := range []struct{ kind, says string }{
		{"not JSON", `not JSON: "<html>upstream error</html>"`},
		{"truncated", "not JSON"},
		{"batch", "a batch"},
		{"string", "not a JSON-RPC message"},
		{"no id", "not a JSON-RPC message"},
		{"repeated key", "not a JSON-RPC message: an object has a key twice"},
		{"other id", `the answer to another request, id "other-1"`},
		{"request", `a request, "roots/list", instead of an answer`},
		{"notification", `a notification, "notifications/message", instead of an answer`},
		{"answer without result", "not a JSON-RPC message"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			res, err := s.Request(ctx, nil, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"kind":"`+tc.kind+`"}}`), 10*time.Minute)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("call: %s, %v (ctx: %v)", res, err, ctx.Err())
			}
			if !strings.Contains(err.Error(), "upstream g") || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q: want the upstream's name and %q", err, tc.says)
			}
			if res, err := s.Request(ctx, nil, "tools/call", json.RawMessage(`{"name":"echo"}`), 10*time.Minute); err != nil || string(res) != result {
				t.Errorf("the next call: %s, %v", res, err)
			}
		})
	}
	u.mu.Lock()
	sessions := u.sessions
	u.mu.Unlock()
	if sessions != 1 || s.Status().State != StateReady {
		t.Errorf("%d sessions begun, state %v: the connection did not stay", sessions, s.Status().State)
	}
}
