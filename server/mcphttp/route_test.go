package mcphttp

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A request of the hub's made during a tool call (an elicitation) goes
// down that call's POST stream, not the session's open GET stream, and
// the client's answer, POSTed apart, resolves it: the call's answer
// carries what the client answered, on the same POST.
func TestElicitationDuringCallGoesDownItsPOST(t *testing.T) {
	t.Parallel()
	face, _, base := isolationHub(t, "per-session")
	c := newElicitingClient(t, base)

	ctx, cancel := context.WithCancel(t.Context())
	get := c.stream(ctx)
	onGET := make(chan string, 1)
	go func() { // ends when the GET is cancelled below
		var seen strings.Builder
		sc := bufio.NewScanner(get.Body)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
		}
		onGET <- seen.String()
	}()
	await.For(t, 5*time.Second, "the GET stream", func() bool { return face.sessions.lookup(c.session).hasStandalone() })

	got := askAnswering(t, c, "carol")
	if !strings.Contains(got, `carol`) || !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":"ask","result"`) {
		t.Errorf("the call's answer on its POST: %s", got)
	}
	cancel()
	if seen := <-onGET; strings.Contains(seen, "elicitation/create") {
		t.Errorf("the elicitation went down the GET stream:\n%s", seen)
	}
}

// A call the client cancels ends its POST with 202 and no answer (the
// session's Conn cancels it and answers nothing), and while a request is
// unanswered another with its id is refused on its own POST, not answered
// down the first one's.
func TestCancelledCallEndsItsPOST(t *testing.T) {
	t.Parallel()
	face, _, base := isolationHub(t, "shared")
	c := newHTTPClient(t, base)
	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	// initialize's answer reaches the client a moment before the face
	// counts it done: wait for that, so that what is answering below is
	// the call.
	await.For(t, 5*time.Second, "initialize to be done", func() bool { return face.sessions.lookup(c.session).Answering() == 0 })
	go func() {
		resp, body := c.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f__hang","arguments":{}}}`)
		done <- result{resp.StatusCode, body}
	}()
	await.For(t, 5*time.Second, "the call in flight", func() bool { return face.sessions.lookup(c.session).Answering() > 0 })

	if _, body := c.post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`); !strings.Contains(body, "already in use") {
		t.Errorf("a second request with id 5: %s", body)
	}
	if resp, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`); resp.StatusCode != 202 {
		t.Errorf("cancel: %d", resp.StatusCode)
	}
	if r := <-done; r.status != 202 || r.body != "" {
		t.Errorf("the cancelled call's POST: %d %q", r.status, r.body)
	}
	if _, body := c.post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`); body != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Errorf("id 5 again once cancelled: %s", body)
	}
}

// Legacy SSE: a request over the session's cap is refused by the
// session's Conn as over stdio, -32000 down the session's stream, and
// its POST accepted like any other.
func TestLegacySSEOverTheCapAnsweredOnTheStream(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s, session_inflight: 1", ""), nil)
	face, ts := serveHTTP(t, h)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/sse", nil)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() string { // the next event's data
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				return data
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return ""
	}
	endpoint := next()
	post := func(body string) int {
		resp, err := testClient.Post(ts.URL+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	post(initializeMsg)
	next()
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// initialize's answer reaches the stream a moment before the session
	// counts it done: wait, so that the one request in flight is the call.
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	await.For(t, 5*time.Second, "initialize to be done", func() bool {
		hs := face.sessions.lookup(u.Query().Get("sessionId"))
		return hs != nil && hs.Answering() == 0
	})
	if code := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__hang","arguments":{}}}`); code != http.StatusAccepted {
		t.Fatalf("the hanging call: %d", code)
	}
	if code := post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusAccepted {
		t.Errorf("a request over the cap: %d", code)
	}
	if got := next(); !strings.Contains(got, `"id":2,"error":{"code":-32000`) {
		t.Errorf("over the cap, on the stream: %s", got)
	}
}
