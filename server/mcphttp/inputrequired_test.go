package mcphttp

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A 2026-07-28 client over HTTP without a session: the fake's elicitation
// during its call comes back as the answer to its POST, input_required,
// and the retry, another POST of a request of its own, resumes the call
// the hub held and gets its result.
//
// The state is bound to the credential the request came with: another
// client's token cannot resume the call.
func TestInputRequiredOverHTTPWithoutSession(t *testing.T) {
	t.Parallel()
	_, ts := ownedFace(t)
	token := tokenA
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "f__ask")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get(headerSessionID); id != "" {
			t.Errorf("a session was given: %s", id)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id, more string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__ask","arguments":{}` + more + `,` + meta + `}}`
	}
	type result struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
			Content       []struct{ Text string }    `json:"content"`
		} `json:"result"`
	}
	body := post(call("1", ""))
	var first result
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.Result.ResultType != "input_required" || first.Result.InputRequests["input-1"] == nil {
		t.Fatalf("first: %v %s", err, body)
	}
	retry := call("2", `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Eve"}}},"requestState":"`+first.Result.RequestState+`"`)
	token = tokenB
	if body = post(retry); !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "issued to another") {
		t.Errorf("another credential's retry: %s", body)
	}
	token = tokenA
	body = post(retry)
	var final result
	if err := json.Unmarshal([]byte(body), &final); err != nil || len(final.Result.Content) != 1 || !strings.Contains(final.Result.Content[0].Text, "Eve") {
		t.Fatalf("final: %v %s", err, body)
	}
}
