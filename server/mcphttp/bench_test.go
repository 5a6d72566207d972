package mcphttp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHTTPToolCall is one flat-mode tools/call POSTed to the HTTP
// face to the fake upstream's echo, in process, one at a time; the answer
// must be plain JSON (nothing came before it).
func BenchmarkHTTPToolCall(b *testing.B) {
	h, _ := runHub(b, flatFakeYAML(b.TempDir(), "", ""), nil)
	face := New(h, Options{NoAuth: true}, testLogger())
	ts := httptest.NewServer(face)
	b.Cleanup(func() { ts.Close(); face.Close() })
	session := ""
	post := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if id := resp.Header.Get(headerSessionID); id != "" {
			session = id
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode == http.StatusOK && ct != "application/json" {
			b.Fatalf("answered %s: %s", ct, out)
		}
		return string(out)
	}
	post(initializeMsg)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	i := 0
	for b.Loop() {
		i++
		if out := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`, i)); !strings.Contains(out, `"x"`) {
			b.Fatalf("answer: %s", out)
		}
	}
}
