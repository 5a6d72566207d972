package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// listenStream is an open subscriptions/listen response.
type listenStream struct {
	t      *testing.T
	resp   *http.Response
	events chan map[string]json.RawMessage // closed when the stream ends
}

// listenRequest is the POST of a 2026-07-28 subscriptions/listen whose
// message is body, with the headers that version asks for.
func listenRequest(ctx context.Context, base, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	return req
}

// openListen POSTs a listen for notifications (the inside of
// notifications: {...}), with the session's id when c has one, and
// returns once the response's headers are in: within 10 s, or the test
// fails. ctx ends the stream.
func openListen(ctx context.Context, c *httpClient, id, notifications string) *listenStream {
	c.t.Helper()
	req := listenRequest(ctx, c.base, `{"jsonrpc":"2.0","id":`+id+`,"method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{`+notifications+`}}}`)
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := testClient.Do(req)
		got <- result{resp, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		c.t.Fatal("no response to subscriptions/listen")
	}
	if r.err != nil {
		c.t.Fatal(r.err)
	}
	c.t.Cleanup(func() { r.resp.Body.Close() })
	if ct := r.resp.Header.Get("Content-Type"); r.resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		b, _ := io.ReadAll(r.resp.Body)
		c.t.Fatalf("listen answered %d %s: %s", r.resp.StatusCode, ct, b)
	}
	ls := &listenStream{t: c.t, resp: r.resp, events: make(chan map[string]json.RawMessage, 100)}
	go func() {
		defer close(ls.events)
		sc := bufio.NewScanner(r.resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(data), &m) == nil {
				ls.events <- m
			}
		}
	}()
	return ls
}

// next is the stream's next message; nil once it has ended.
func (ls *listenStream) next() map[string]json.RawMessage {
	ls.t.Helper()
	select {
	case m := <-ls.events:
		return m
	case <-time.After(time.Minute): // bounds a hang, not a timing
		ls.t.Fatal("nothing on the listen's stream")
		return nil
	}
}

func subscriptionID(m map[string]json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m["params"], &p)
	return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
}

func method(m map[string]json.RawMessage) string {
	var s string
	_ = json.Unmarshal(m["method"], &s)
	return s
}

// A listen without a session (2026-07-28) is answered at once with an
// event stream whose first message is the acknowledgement; an upstream's
// resources/updated of a URI it names and its tools/list_changed follow,
// each with the listen's id; when the client closes the stream, the
// listen's session and its subscription end.
func TestHTTPListen(t *testing.T) {
	h := fakeHub(t)
	hs, ts := serveHTTP(t, h)
	c := &httpClient{t: t, base: ts.URL}
	ctx, cancel := context.WithCancel(t.Context())
	ls := openListen(ctx, c, `"L"`, `"toolsListChanged":true,"resourceSubscriptions":["mem://a"]`)
	ack := ls.next()
	if method(ack) != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != `"L"` ||
		!strings.Contains(string(ack["params"]), `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}`) {
		t.Fatalf("first message: %v", ack)
	}

	postModern(t, ts.URL, "f__touch", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"mem://a"},`+modernMeta+`}}`)
	if m := ls.next(); method(m) != "notifications/resources/updated" || subscriptionID(m) != `"L"` || !strings.Contains(string(m["params"]), `"uri":"mem://a"`) {
		t.Errorf("after touch: %v", m)
	}
	postModern(t, ts.URL, "f__mutate", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__mutate","arguments":{},`+modernMeta+`}}`)
	if m := ls.next(); method(m) != "notifications/tools/list_changed" || subscriptionID(m) != `"L"` {
		t.Errorf("after mutate: %v", m)
	}

	cancel()
	await.For(t, 10*time.Second, "the listen's session to end", func() bool { return sessionCount(hs) == 0 && hubSessions(h) == 0 })
}

// A listen (2026-07-28: no session; Mcp-Session-Id is ignored) whose POST
// the client drops ends in the hub, and its session of one request with
// it; a client that does not accept an event stream is told so.
func TestHTTPListenEnds(t *testing.T) {
	h := fakeHub(t)
	hs, ts := serveHTTP(t, h)
	c := &httpClient{t: t, base: ts.URL}

	ctx, cancel := context.WithCancel(t.Context())
	ls := openListen(ctx, c, `2`, `"toolsListChanged":true`)
	ls.next()
	if n := hubSessions(h); n != 1 {
		t.Fatalf("%d hub sessions while the listen is open, want 1", n)
	}
	cancel()
	await.For(t, 10*time.Second, "the hub's listen to end", func() bool { return sessionCount(hs) == 0 && hubSessions(h) == 0 })

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{"toolsListChanged":true}}}`))
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(b), `"id":3`) {
		t.Errorf("listen without event stream: %d %s", resp.StatusCode, b)
	}
}

// postModern posts a 2026-07-28 tools/call of tool, with the headers that
// version asks for, and returns the answer's body.
func postModern(t *testing.T, base, tool, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", tool, resp.StatusCode, b)
	}
	return string(b)
}

// One client's open listens (each a session while it lasts) may not take
// every session: past a quarter of max_sessions its next listen gets 503,
// and a request still finds a session.
func TestHTTPListensCapped(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTPWith(t, h, Options{MaxSessions: 8})
	c := &httpClient{t: t, base: ts.URL}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 2 {
		openListen(ctx, c, fmt.Sprint(i), `"toolsListChanged":true`).next() // the ack
	}
	resp, err := testClient.Do(listenRequest(ctx, ts.URL, `{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{"toolsListChanged":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third listen with max_sessions 8: %d, want 503", resp.StatusCode)
	}
	if got := postModern(t, ts.URL, "f__echo", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"},`+modernMeta+`}}`); !strings.Contains(got, "hi") {
		t.Errorf("a call beside the listens: %s", got)
	}
}

// A 2026-07-28 listen refused before it is acknowledged (its params
// wrong) is answered as any request of that version is: plain JSON, 400
// for -32602, not an event stream of 200 with the error inside.
func TestHTTPListenRefusedAs400(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	hs, ts := serveHTTP(t, h)
	for _, params := range []string{
		modernMeta,                        // no notifications
		modernMeta + `,"notifications":7`, // not an object
	} {
		resp, err := testClient.Do(listenRequest(t.Context(), ts.URL, `{"jsonrpc":"2.0","id":"bad","method":"subscriptions/listen","params":{`+params+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			!strings.Contains(string(b), `"code":-32602`) || !strings.Contains(string(b), `"id":"bad"`) {
			t.Errorf("listen with params {%s}: %d %s %s", params, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	await.For(t, 10*time.Second, "the refused listens' sessions to end", func() bool { return sessionCount(hs) == 0 && hubSessions(h) == 0 })
}

// A listen whose acknowledgement waits (the resource it names is an
// upstream's that is still starting) has its response headers while it
// waits: go-sdk's client sends a listen (its Subscribe) and waits for
// them, whatever its context. The upstream is let start only once the
// headers are in, so its acknowledgement agrees to the resource only if
// they came first: headers that waited for it came with an
// acknowledgement that had given up on the upstream (at its connect
// timeout) and agreed to nothing.
func TestHTTPListenHeadersWhileAckWaits(t *testing.T) {
	t.Parallel()
	h, open := coldHub(t)
	_, ts := serveHTTP(t, h)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := testClient.Do(listenRequest(ctx, ts.URL, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{"resourceSubscriptions":["mem://a"]}}}`))
		got <- result{resp, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no response headers to the listen")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	if ct := r.resp.Header.Get("Content-Type"); r.resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("listen answered %d %s", r.resp.StatusCode, ct)
	}
	open()
	sc := bufio.NewScanner(r.resp.Body)
	for sc.Scan() { // bounded by the upstream's start: startup_wait
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(data, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(data, `"resourceSubscriptions":["mem://a"]`) {
				t.Errorf("the headers came with the acknowledgement, which did not wait for the upstream: %s", data)
			}
			return
		}
	}
	t.Fatalf("the stream ended without the acknowledgement: %v", sc.Err())
}
