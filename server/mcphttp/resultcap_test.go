package mcphttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// A result cut to max_result over HTTP is read by the caller that made
// the call alone: a 2026-07-28 client without a session by the same
// credential (another credential is told it does not exist, as for an id
// that never was), a session by itself (another session of the same
// credential is not).
func TestMaxResultOverHTTP(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 1m, max_result: 20KB", `    args: ["-large"]`+"\n"), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	url := ts.URL + "/mcp"
	original := fakeupstream.LargeResult("text", 300000)

	type answer struct {
		Result struct {
			ResultType string `json:"resultType"`
			Content    []struct{ Type, URI string }
			Contents   []struct{ Text string }
			Meta       struct {
				Pages int `json:"dynamic-mcp/pages"`
			} `json:"_meta"`
		}
		Error *struct{ Code int }
	}
	decode := func(body string) answer {
		t.Helper()
		var a answer
		if i := strings.Index(body, "data: "); i >= 0 && strings.HasPrefix(body, "event:") { // an SSE answer
			body = strings.TrimSpace(body[i+len("data: "):])
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("%v: %.500s", err, body)
		}
		return a
	}
	linkOf := func(body string) string {
		t.Helper()
		if len(body) >= 20000 {
			t.Fatalf("the answer takes %d bytes", len(body))
		}
		for _, c := range decode(body).Result.Content {
			if c.Type == "resource_link" && strings.HasPrefix(c.URI, "dynamic-mcp://results/") {
				return c.URI
			}
		}
		t.Fatalf("no link: %.2000s", body)
		return ""
	}
	// readAll reads every page with post and returns the bytes.
	readAll := func(post func(body string) string, uri string) string {
		var whole strings.Builder
		for p, pages := 1, 1; p <= pages; p++ {
			a := decode(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"%s?page=%d"%%s}}`, 10+p, uri, p)))
			if a.Error != nil || len(a.Result.Contents) != 1 {
				t.Fatalf("page %d: %+v", p, a)
			}
			whole.WriteString(a.Result.Contents[0].Text)
			pages = a.Result.Meta.Pages
		}
		return whole.String()
	}

	t.Run("sessionless", func(t *testing.T) {
		meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		post := func(token string) func(body string) string {
			return func(body string) string {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(body, meta)))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				var m struct {
					Method string
					Params struct{ Name, URI string }
				}
				_ = json.Unmarshal([]byte(fmt.Sprintf(body, meta)), &m)
				req.Header.Set("Mcp-Method", m.Method)
				req.Header.Set("Mcp-Name", m.Params.Name+m.Params.URI)
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
		}
		body := post(tokenA)(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__large","arguments":{"text":"text","ms":300000}%s}}`)
		uri := linkOf(body)
		if decode(body).Result.ResultType != "complete" {
			t.Errorf("the cut answer lost resultType: %.300s", body)
		}
		// The whole result as this client would have been answered:
		// with the resultType 2026-07-28 adds.
		if got, want := readAll(post(tokenA), uri), strings.TrimSuffix(original, "}")+`,"resultType":"complete"}`; got != want {
			t.Fatalf("the pages give %d bytes, not the %d of the result", len(got), len(want))
		}
		theirs := decode(post(tokenB)(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"` + uri + `"%s}}`))
		never := decode(post(tokenB)(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"dynamic-mcp://results/never"%s}}`))
		if theirs.Error == nil || never.Error == nil || theirs.Error.Code != never.Error.Code {
			t.Errorf("another credential's read: %+v, an unknown id's: %+v", theirs, never)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		open := func() func(body string) string {
			code, session, body := call(t, http.MethodPost, url, tokenA, "", initializeMsg)
			if code != http.StatusOK || session == "" {
				t.Fatalf("initialize: %d %s", code, body)
			}
			call(t, http.MethodPost, url, tokenA, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			return func(body string) string {
				_, _, b := call(t, http.MethodPost, url, tokenA, session, strings.Replace(body, "%s", "", 1))
				return b
			}
		}
		mine, other := open(), open()
		uri := linkOf(mine(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__large","arguments":{"text":"text","ms":300000}}}`))
		if got := readAll(mine, uri); got != original {
			t.Fatalf("the pages give %d bytes, not the original %d", len(got), len(original))
		}
		if a := decode(other(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"` + uri + `"}}`)); a.Error == nil || a.Error.Code != -32002 {
			t.Errorf("another session's read: %+v", a)
		}
	})
}
