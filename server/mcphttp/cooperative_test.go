package mcphttp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The cooperative tools behind the HTTP face take the face's bearer
// authentication as every call does: checkIntent without the token is
// refused 401, with it answered; and their rate limits count per caller,
// so that a second session of the same token finds the budget its first
// spent, while another token's session has its own.
func TestCooperativeOverHTTP(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "cooperative: on, call_timeout: 5s", ""), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	post := func(token, session, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(headerSessionID), string(b)
	}
	open := func(token string) string {
		t.Helper()
		code, session, body := post(token, "", initializeMsg)
		if code != http.StatusOK || session == "" {
			t.Fatalf("initialize: %d %s", code, body)
		}
		post(token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return session
	}
	call := func(id int, tool, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	}
	intent := call(1, "checkIntent", `{"description":"d","action_type":"other","target":"t","tool":"f__echo"}`)

	a1 := open(tokenA)
	for _, token := range []string{"", "not-the-token"} {
		if code, _, body := post(token, a1, intent); code != http.StatusUnauthorized || strings.Contains(body, "allowed") {
			t.Errorf("checkIntent with token %q: %d %s", token, code, body)
		}
	}
	if code, _, body := post(tokenA, a1, intent); code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("checkIntent with the token: %d %s", code, body)
	}

	// requestPermission allows 10 calls a minute: a1 spends them (a token
	// comes back every 6s, so it may take a few more on a slow machine).
	ask := `{"resource":"x","operation":"read","justification":"j","tool":"f__sleep"}`
	over := func(body string) bool { return strings.Contains(body, `"code":-32000`) }
	spent := false
	for i := 2; i < 40 && !spent; i++ {
		_, _, body := post(tokenA, a1, call(i, "requestPermission", ask))
		spent = over(body)
	}
	if !spent {
		t.Fatal("39 calls of requestPermission within a minute, none refused")
	}
	if _, _, body := post(tokenA, open(tokenA), call(1, "requestPermission", ask)); !over(body) {
		t.Errorf("a second session of the same token, its first call: %s", body)
	}
	if _, _, body := post(tokenB, open(tokenB), call(1, "requestPermission", ask)); over(body) || !strings.Contains(body, `"result"`) {
		t.Errorf("another token's session, its first call: %s", body)
	}
}
