package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// rawGET opens GET /mcp for session on a connection of its own and never
// reads it beyond the headers.
func rawGET(t *testing.T, base, session string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n", strings.TrimPrefix(base, "http://"), headerSessionID, session)
	br := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second * await.Slow))
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("GET: %q %v", status, err)
	}
	return nc, br
}

// A second GET with the session's id while its GET stream is open is
// refused with 409 Conflict (the spec allows one such stream), and the
// first stream stays the session's: messages still go down it. (Before,
// the second took the stream over, so that anyone who learnt a session id
// could read what the hub sent that client.)
func TestAttackSecondGETRefused(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	face, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	first, br1 := rawGET(t, ts.URL, c.session)
	defer first.Close()
	await.For(t, 5*time.Second, "the first GET stream", func() bool { return face.sessions.lookup(c.session).hasStandalone() })
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream: %d, want 409", resp.StatusCode)
	}
	// A resource update (which relates to no call: a log message during
	// the call would go down the call's own stream) reaches the first
	// stream.
	c.post(`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"fake://fake/res/1"}}`)
	c.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"fake://fake/res/1"}}}`)
	first.SetReadDeadline(time.Now().Add(3 * time.Second * await.Slow))
	for {
		line, err := br1.ReadString('\n')
		if err != nil {
			t.Fatalf("the first stream: %v", err)
		}
		if strings.Contains(line, `"notifications/resources/updated"`) {
			break
		}
	}
	// Once the first is closed, a new GET is the session's.
	first.Close()
	await.For(t, 5*time.Second, "the first stream to end", func() bool { return !face.sessions.lookup(c.session).hasStandalone() })
	second, _ := rawGET(t, ts.URL, c.session)
	second.Close()
}

// A request of the hub's to the client (elicitation during a tool call)
// when the client has no stream open: the call POSTed without accepting
// an event stream, no GET. The tool call must fail (or the elicitation be
// refused) at once, not hang to the call timeout.
func TestAttackServerRequestWithNoStream(t *testing.T) {
	t.Parallel()
	// A call timeout far beyond "at once", so that a busy machine cannot
	// pass for a hang.
	_, ts := serveHTTP(t, patientHub(t))
	c := &httpClient{t: t, base: ts.URL}
	c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__ask"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(headerSessionID, c.session)
	start := time.Now()
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if time.Since(start) > time.Minute {
		t.Errorf("answered after %v: %.300s", time.Since(start), body)
	}
	if !strings.Contains(string(body), `"id":1`) {
		t.Errorf("answer: %.300s", body)
	}
	t.Logf("%v: %.300s", time.Since(start), body)
}

// fakeSleeping is how many calls of sleep the fake upstream c's calls go
// to has received (its state tool's count): a call counted there is in
// flight at the upstream, past the hub.
func fakeSleeping(t *testing.T, c *httpClient) int {
	t.Helper()
	_, body := c.post(`{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"f__state"}}`)
	var m struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	var st struct {
		Sleeping int `json:"sleeping"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.Result.Content) == 0 || json.Unmarshal([]byte(m.Result.Content[0].Text), &st) != nil {
		t.Fatalf("state: %s", body)
	}
	return st.Sleeping
}

// A client that POSTs a call with an event stream accepted and
// disconnects mid-call: the handler goroutine and the stream go away once
// the call ends, and the session keeps working.
func TestAttackHTTPDisconnectMidCall(t *testing.T) {
	h := fakeHub(t)
	face, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	before := liveGoroutines()
	sleeping := func() int { return fakeSleeping(t, c) }
	for i := range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp",
			strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":300}}}`, 100+i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerSessionID, c.session)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := testClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		// The client goes once the call has reached the upstream.
		await.For(t, 5*time.Second, "the call at the upstream", func() bool { return sleeping() == i+1 })
		cancel()
		<-done
	}
	_, body := c.post(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"}}}`)
	if !strings.Contains(body, `"text":"still"`) {
		t.Errorf("after disconnects: %.300s", body)
	}
	hs := face.sessions.lookup(c.session)
	await.For(t, 3*time.Second, "the calls to end", func() bool { return hs.Answering() == 0 })
	// A POST's stream leaves the registry when its handler is done, on
	// its own goroutine, not always before the call's end is counted
	// (seen under load): one that stays is still a failure.
	await.For(t, 3*time.Second, "no POST stream left registered", func() bool { return hs.st.open() == 0 })
	testClient.CloseIdleConnections()
	waitGoroutines(t, before)
}

// legacyNotReading opens a legacy SSE stream on a hub with small socket
// buffers, reads only up to its endpoint and returns the hub, the server
// and the endpoint; the stream is never read again.
func legacyNotReading(t *testing.T) (*Server, *httptest.Server, string) {
	t.Helper()
	h := fakeHub(t)
	face, ts := serveHTTP(t, h)
	nc := dialSlowReader(t, ts.URL)
	fmt.Fprintf(nc, "GET /sse HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(ts.URL, "http://"))
	br := bufio.NewReader(nc)
	var endpoint string
	nc.SetReadDeadline(time.Now().Add(5 * time.Second * await.Slow))
	for endpoint == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = e
		}
	}
	return face, ts, endpoint
}

// dialSlowReader connects to the server at base with a small receive
// buffer, so that a client that stops reading is felt after kilobytes;
// the connection closes when the test ends.
func dialSlowReader(t *testing.T, base string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	return nc
}

// Legacy SSE: a client that never reads its stream and POSTs requests with
// ids all different: once as many answers wait as a session may have in
// flight, more requests are refused on their POST (429), so the stream's
// queue stays bounded.
func TestAttackLegacySSENotReadAnswersBounded(t *testing.T) {
	t.Parallel()
	face, ts, endpoint := legacyNotReading(t)
	// The queue is measured after every POST while the session lives: the
	// session may end meanwhile (its stream's write times out after 10 s,
	// which a slow machine may reach), and the bound must have held until
	// then.
	hs := face.sessions.lookup(strings.TrimPrefix(endpoint, "/message?sessionId="))
	if hs == nil {
		t.Fatal("no session for the stream")
	}
	refused, peak, ended := 0, 0, false
	for i := range 1000 {
		resp, err := testClient.Post(ts.URL+endpoint, "application/json", strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"pad":"%s"}}}`, i, strings.Repeat("p", 2000))))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		}
		peak = max(peak, hs.standaloneLen())
		if resp.StatusCode == http.StatusNotFound {
			ended = true // the session ended: a slow machine reached the stream's write timeout first
			break
		}
	}
	if peak > 2*jsonrpc.DefaultMaxInflight || refused == 0 && !ended {
		t.Errorf("up to %d answers queued for a client that does not read (%d refused)", peak, refused)
	}
}

// Legacy SSE: a client that opens /sse and never reads it, then POSTs
// requests. Answers to its own requests are bounded by the in-flight
// limit; refusals (a duplicate id, over the limit) must be too.
func TestAttackLegacySSENotReadRefusalsBounded(t *testing.T) {
	t.Parallel()
	face, ts, endpoint := legacyNotReading(t)
	hs := face.sessions.lookup(strings.TrimPrefix(endpoint, "/message?sessionId="))
	if hs == nil {
		t.Fatal("no session for the stream")
	}
	// The stream is never read. One request hangs, holding id 1; every
	// later request with id 1 is refused, on its POST (400), not onto the
	// stream. The stream's queue is measured after every POST while the
	// session lives (see TestAttackLegacySSENotReadAnswersBounded).
	peak := 0
	post := func(body string) bool {
		resp, err := testClient.Post(ts.URL+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		peak = max(peak, hs.standaloneLen())
		switch resp.StatusCode {
		case http.StatusAccepted, http.StatusBadRequest:
			return true
		case http.StatusTooManyRequests:
			// On a busy machine the pings can come before the hanging call
			// holds id 1: answered onto the unread stream, until 256 wait
			// and the POSTs are refused. Bounded all the same.
			return true
		case http.StatusNotFound:
			return false // the session ended
		}
		t.Fatalf("POST: %v", resp.Status)
		return false
	}
	post(initializeMsg)
	post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__hang"}}`)
	pad := strings.Repeat("p", 2000)
	for range 3000 {
		if !post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + pad + `"}}}`) {
			break
		}
	}
	if peak > 600 {
		t.Errorf("the legacy stream's outbox held up to %d refusals for a client that does not read", peak)
	}
}

func (hs *httpSession) standaloneLen() int {
	hs.st.mu.Lock()
	defer hs.st.mu.Unlock()
	if hs.st.standalone == nil {
		return 0
	}
	return hs.st.standalone.queued()
}

// waitGoroutines waits for the goroutine count to come back to before
// (allowing a few of the runtime's and the pipes' own). Idle handler
// workers of jsonrpc.Conn, which end by themselves after 10 s, are not
// counted (see jsonrpc's TestAttackNoGoroutinesAfterClose).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a deadline, not a guess: it returns as soon as they are back
	for liveGoroutines() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := liveGoroutines(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// liveGoroutines counts goroutines but jsonrpc's idle workers.
func liveGoroutines() int {
	return goroutines(func(g string) bool {
		return !strings.Contains(g, "jsonrpc.(*Workers).run") || !strings.Contains(g, "[select")
	})
}

// goroutines counts the goroutines whose stack (header and frames) is
// one that counts.
func goroutines(counts func(stack string) bool) int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if counts(g) {
			n++
		}
	}
	return n
}
