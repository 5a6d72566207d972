package mcphttp

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
)

// The HTTP face's guard, session rules and the requests it routes, each
// answered as the spec and docs/http.md say.
func TestHTTPFace(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	hs := New(h, Options{Token: "secret", Loopback: true, AllowedOrigins: []string{"https://app.example"}}, testLogger())
	defer hs.Close()
	do := func(method, path, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		return w.Result(), w.Body.String()
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no token", map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"listed origin", map[string]string{"Origin": "https://app.example"}, http.StatusOK},
		{"loopback origin", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
	} {
		resp, body := do(http.MethodPost, "/mcp", initializeMsg, tc.header)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	resp, body := do(http.MethodPost, "/mcp", initializeMsg, nil)
	session := resp.Header.Get(headerSessionID)
	if session == "" || !strings.Contains(body, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", body)
	}
	with := map[string]string{headerSessionID: session}
	do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, with)
	for _, tc := range []struct {
		name, method, body string
		header             map[string]string
		status             int
		want               string
	}{
		{"no session", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 400, "header is required"},
		{"unknown session", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{headerSessionID: "nope"}, 404, "Session not found"},
		{"not JSON", http.MethodPost, `{"jsonrpc":`, with, 400, `"code":-32700`},
		{"batch", http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, with, 400, "batch requests are not supported"},
		{"too large", http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"` + strings.Repeat("a", 11<<20) + `"}}`, with, 413, `"id":5`},
		{"ping", http.MethodPost, `{"jsonrpc":"2.0","id":"p","method":"ping"}`, with, 200, `{"jsonrpc":"2.0","id":"p","result":{}}`},
		{"prompt", http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"f__prompt-1","arguments":{"topic":"x"}}}`, with, 200, `got prompt-1`},
		{"unknown prompt", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"nope"}}`, with, 200, `Prompt not found: nope`},
		{"read", http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"fake://fake/res/1"}}`, with, 200, `content of fake://fake/res/1`},
		{"unknown resource", http.MethodPost, `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"nope://x"}}`, with, 200, `"code":-32002`},
		{"complete", http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"f__prompt-1"},"argument":{"name":"topic","value":"a"}}}`, with, 200, `ref:prompt-1`},
		{"subscribe", http.MethodPost, `{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"fake://fake/res/1"}}`, with, 200, `"id":8,"result":{}`},
		{"unsubscribe", http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"resources/unsubscribe","params":{"uri":"fake://fake/res/1"}}`, with, 200, `"id":9,"result":{}`},
		{"set level", http.MethodPost, `{"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"debug"}}`, with, 200, `"id":10,"result":{}`},
		{"a response to nothing", http.MethodPost, `{"jsonrpc":"2.0","id":"x","result":{}}`, with, 202, ``},
		{"cancel of nothing", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, with, 202, ``},
		{"GET without SSE", http.MethodGet, ``, map[string]string{headerSessionID: session, "Accept": "application/json"}, 406, ``},
		{"PUT", http.MethodPut, ``, with, 405, ``},
		{"delete", http.MethodDelete, ``, with, 200, ``},
		{"after delete", http.MethodPost, `{"jsonrpc":"2.0","id":11,"method":"ping"}`, with, 404, ``},
	} {
		resp, body := do(tc.method, "/mcp", tc.body, tc.header)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %.300s", tc.name, resp.StatusCode, body)
		}
	}
	if hs.sessions.lookup(session) != nil || slices.ContainsFunc(h.Sessions().Info(), func(s routes.SessionInfo) bool { return s.ID == session }) {
		t.Error("the session is still there after DELETE")
	}
}

// The legacy HTTP+SSE transport: GET /sse names the endpoint, and answers
// to what is POSTed there come down the stream.
func TestLegacySSE(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	resp, err := testClient.Get(ts.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() }) // else the server's Close waits for the stream
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
		close(events)
	}()
	n := 0
	next := func() string {
		n++
		select {
		case e := <-events:
			return e
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("event %d: none", n)
			return ""
		}
	}
	endpoint := next()
	u, err := url.Parse(ts.URL + endpoint)
	if err != nil || u.Query().Get("sessionId") == "" {
		t.Fatalf("endpoint %q", endpoint)
	}
	post := func(body string) int {
		resp, err := testClient.Post(u.String(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(initializeMsg); code != http.StatusAccepted {
		t.Fatalf("POST: %d", code)
	}
	if e := next(); !strings.Contains(e, `"id":0,"result"`) {
		t.Errorf("initialize: %s", e)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"legacy"}}}`)
	if e := next(); !strings.Contains(e, `"text":"legacy"`) {
		t.Errorf("call: %s", e)
	}
	unknown, err := testClient.Post(ts.URL+"/message?sessionId=nope", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	unknown.Body.Close()
	if unknown.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d", unknown.StatusCode)
	}
}

// A legacy SSE client that POSTs the moment it reads the endpoint gets
// its answer: the stream is the session's before the endpoint is named
// (it was set just after, and an answer in between was lost).
func TestLegacySSEAnswerRightAfterEndpoint(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	for i := range 30 {
		resp, err := testClient.Get(ts.URL + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() }) // else the server's Close waits for the stream
		r := bufio.NewReader(resp.Body)
		var endpoint string
		for endpoint == "" {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				endpoint = data
			}
		}
		post, err := testClient.Post(ts.URL+endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"p","method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		post.Body.Close()
		got := make(chan string, 1)
		go func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil || strings.Contains(line, `"id":"p"`) {
					got <- line
					return
				}
			}
		}()
		select {
		case line := <-got:
			if !strings.Contains(line, `"result":{}`) {
				t.Errorf("try %d: %q", i, line)
			}
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("try %d: no answer to a ping POSTed right after the endpoint", i)
		}
		resp.Body.Close()
	}
}
