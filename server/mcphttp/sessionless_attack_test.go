package mcphttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// modernHead is the start of a 2026-07-28 POST of method (named name)
// without a session: its request line and headers, Content-Length for
// n bytes of body.
func modernHead(base, method, name string, n int) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"%s: 2026-07-28\r\nMcp-Method: %s\r\nMcp-Name: %s\r\nContent-Length: %d\r\n\r\n",
		strings.TrimPrefix(base, "http://"), headerProtocolVersion, method, name, n)
}

// sessionlessWriters counts the goroutines that write the event stream of
// a request answered without a session: its flush, or its handler writing
// what was queued and the answer (when the call ended before the flush
// began, as on a loaded machine: the flush then may stop unwritten,
// oneCall.answer), whether in the stream's start or its events.
func sessionlessWriters() int {
	return goroutines(func(g string) bool { return strings.Contains(g, "mcphttp.(*oneCall).write(") })
}

// logFaceGoroutinesIfFailed logs, when t has failed, the stacks of the
// goroutines in this package's code: what a wait that timed out waited
// on, for a failure that shows only on a loaded machine. Deferred by the
// test, so that it runs before the cleanups close its connections.
func logFaceGoroutinesIfFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "mcphttp.") {
			t.Logf("%s\n", g)
		}
	}
}

// sessionlessHandlers counts the handlers of requests without a session
// still running.
func sessionlessHandlers() int {
	return goroutines(func(g string) bool { return strings.Contains(g, "mcphttp.(*Server).answerSessionless(") })
}

// A client of 2026-07-28 POSTs, without a session, a call that sends
// progress before its answer, far more than the sockets hold, and stops
// reading: its request holds its place in flight, and its handler, only
// until the client goes (at once) or the write deadline passes (the
// server closes the connection); meanwhile other requests are answered,
// and afterwards nothing of it is left: no writer, no handler, no place
// in flight.
func TestAttackSessionlessStreamNotRead(t *testing.T) {
	beyond := time.Hour
	if d, ok := t.Deadline(); ok {
		beyond = time.Until(d) + time.Minute
	}
	text := strings.Repeat("p", 256<<10)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__progress","arguments":{"text":"` + text + `"},"_meta":{"progressToken":"t",` + strings.TrimPrefix(modernMeta, `"_meta":{`) + `}}`
	stall := func(base string) net.Conn {
		nc := dialSlowReader(t, base)
		fmt.Fprint(nc, modernHead(base, "tools/call", "f__progress", len(call))+call)
		return nc
	}
	echo := `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"},` + modernMeta + `}}`
	answered := func(base string) {
		t.Helper()
		if got := postModern(t, base, "f__echo", echo); !strings.Contains(got, `"text":"still"`) {
			t.Errorf("a call while a stream is not read: %.300s", got)
		}
	}

	face, ts := serveHTTPSmall(t, patientHub(t), Options{writeTimeout: beyond}, nil)
	quick, qts, closed := quickFace(t)
	defer logFaceGoroutinesIfFailed(t) // runs before the cleanups: the goroutines as they were
	before := liveGoroutines()
	goes, stays := stall(ts.URL), stall(ts.URL)
	await.For(t, 10*time.Second, "both calls' writers stuck in a write", func() bool { return sessionlessWriters() == 2 })
	answered(ts.URL)
	if n := face.inflight.load(); n != 2 {
		t.Errorf("%d requests in flight, want the 2 whose streams are not read", n)
	}
	goes.Close()
	await.For(t, 5*time.Second, "the handler to end once its client went", func() bool { return sessionlessHandlers() == 1 })
	stays.Close()
	await.For(t, 5*time.Second, "the handler to end once its client went", func() bool { return sessionlessHandlers() == 0 })
	if n := face.inflight.load(); n != 0 {
		t.Errorf("%d requests in flight once their clients went", n)
	}

	// The client stays and does not read: the write deadline ends it.
	nc := stall(qts.URL)
	wait := time.NewTimer(10 * time.Second * await.Slow)
	defer wait.Stop()
	for addr := ""; addr != nc.LocalAddr().String(); {
		select {
		case addr = <-closed:
		case <-wait.C:
			t.Fatal("the server did not close the connection of a request whose client did not read, past the write deadline")
		}
	}
	await.For(t, 10*time.Second, "the handler to end past the write deadline", func() bool {
		return quick.inflight.load() == 0 && sessionlessHandlers() == 0
	})
	answered(qts.URL)
	nc.Close()
	testClient.CloseIdleConnections()
	waitGoroutines(t, before)
}

// A 2026-07-28 request that carries another client's Mcp-Session-Id is
// answered as one without a session: the answer names no session, and
// what its _meta states (who the client is, what it can do) stays the
// request's, the session's as its client stated it.
func TestAttackSessionlessWithAnotherSessionID(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	victim := newHTTPClient(t, ts.URL)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"attacker","version":"6"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set(headerSessionID, victim.session)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"f__echo"`) || resp.Header.Get(headerSessionID) != "" {
		t.Errorf("the request with another's session id: %d, session %q, %.300s", resp.StatusCode, resp.Header.Get(headerSessionID), b)
	}
	for _, info := range h.Sessions().Info() {
		if info.ID != victim.session {
			continue
		}
		if info.ClientName != "t" || info.ProtocolVersion != "2025-06-18" || info.Capabilities.Roots == nil {
			t.Errorf("the session whose id the request carried is now of %q, version %q, capabilities %+v", info.ClientName, info.ProtocolVersion, info.Capabilities)
		}
		return
	}
	t.Errorf("the session whose id the request carried is gone: %+v", h.Sessions().Info())
}

// What a careless or hostile client of 2026-07-28 POSTs without a
// session (headers that do not mirror the body, versions that only sort
// as modern, _meta of every wrong type, huge statements, methods that
// version removed) is answered at once with an error or a result; none
// panics the hub, none is answered 5xx, none leaves a session open, and
// requests go on being served.
func TestAttackSessionlessHostileAnswered(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	big := strings.Repeat("x", 256<<10)
	odd := "2026-07-28" + strings.Repeat("9", 4<<10)
	type hostile struct{ version, method, name, body string }
	cases := []hostile{
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"x"}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{odd, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + odd + `","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + meta + `,"io.modelcontextprotocol/clientInfo":{"name":"` + big + `","version":{}}}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + meta + `,"io.modelcontextprotocol/clientInfo":[]}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"` + big + `":{}},"roots":7,"sampling":[]}}}}`},
		{"2026-07-28", "tools/call", "f__echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},"_meta":{` + meta + `,"progressToken":{"a":[]}}}}`},
		{"2026-07-28", "tools/call", "f__echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},"_meta":{` + meta + `,"progressToken":"` + big + `"}}}`},
		{"2026-07-28", "tools/call", "=?base64?!!!?=", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},"_meta":{` + meta + `}}}`},
		{"2026-07-28", "tools/call", "f__echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"_meta":{` + meta + `}}}`},
		{"2026-07-28", "tools/call", "f__echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":"x","inputResponses":{"a":7},"requestState":[],"_meta":{` + meta + `}}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","_meta":{` + meta + `}}}`},
		{"2026-07-28", "initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{` + meta + `}}}`},
		{"2026-07-28", "ping", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{` + meta + `}}}`},
		{"2026-07-28", "server/discover", "", `{"jsonrpc":"2.0","id":{},"method":"server/discover","params":{"_meta":{` + meta + `}}}`},
		{"2026-07-28", "resources/read", "", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":{},"_meta":{` + meta + `}}}`},
		{"2026-07-28", "prompts/get", "", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"` + big + `","_meta":{` + meta + `}}}`},
		{"2026-07-28", "tasks/get", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + big + `","_meta":{` + meta + `}}}`},
		{"2026-07-28", "subscriptions/listen", "", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":7,"_meta":{` + meta + `}}}`},
		{"2026-07-28", "", "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":[` + strings.Repeat("1,", 1000) + `1]}}}`},
		{"2026-07-28", "", "", `[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + meta + `}}}]`},
	}
	for i, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerProtocolVersion, c.version)
		if c.method != "" {
			req.Header.Set("Mcp-Method", c.method)
		}
		if c.name != "" {
			req.Header.Set("Mcp-Name", c.name)
		}
		start := time.Now()
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if took := time.Since(start); took > 5*time.Second*await.Slow {
			t.Errorf("%d %.80q: answered after %s", i, c.body, took)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%d %.80q: %d %.300s", i, c.body, resp.StatusCode, got)
		}
		if n := h.Panics().Count(); n != 0 {
			t.Fatalf("%d %.80q: the hub recovered from %d panics", i, c.body, n)
		}
		if testing.Verbose() {
			t.Logf("%d: %d %.200s", i, resp.StatusCode, got)
		}
	}
	if n := len(h.Sessions().Info()); n != 0 {
		t.Errorf("%d sessions left open by requests without one", n)
	}
	if got := postModern(t, ts.URL, "f__echo", `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"},`+modernMeta+`}}`); !strings.Contains(got, "still") {
		t.Errorf("a request after: %s", got)
	}
}

// A 2026-07-28 client's body without end (chunked, past the message
// limit) is cut with 413 once over the limit, and one whose client dies
// halfway through is dropped: neither holds any of the budget of bodies,
// a place in flight or a handler afterwards, and the next request is
// answered.
func TestAttackSessionlessBodies(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s, max_message_size: 64KiB", ""), nil)
	face, ts := serveHTTP(t, h)
	head := func(length string) string {
		return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"%s: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: f__echo\r\n%s\r\n\r\n", headerProtocolVersion, length)
	}
	start := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"`

	// Endless: chunks until the server answers.
	nc := dialSlowReader(t, ts.URL)
	fmt.Fprint(nc, head("Transfer-Encoding: chunked"))
	fmt.Fprintf(nc, "%x\r\n%s\r\n", len(start), start)
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			close(answered)
			return
		}
		answered <- resp
	}()
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 4096, strings.Repeat("a", 4096))
	var resp *http.Response
	for sent := 0; resp == nil; sent++ {
		select {
		case resp = <-answered:
			if resp == nil {
				t.Fatal("the connection closed without an answer")
			}
		default:
			// 64 MiB: far past the limit, and past what the sockets'
			// buffers take in while a busy server has not read yet (a few
			// MiB on loopback; 4 MiB were written once under load before
			// the server answered): only a server that reads on gets here.
			if sent > 1<<14 {
				t.Fatal("a body past the message limit was read on")
			}
			if _, err := nc.Write([]byte(chunk)); err != nil {
				resp = <-answered
				if resp == nil {
					t.Fatalf("the connection closed without an answer: %v", err)
				}
			}
		}
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body without end: %d, want 413", resp.StatusCode)
	}
	nc.Close()

	// Dies halfway.
	nc = dialSlowReader(t, ts.URL)
	fmt.Fprint(nc, head("Content-Length: 10000")+start)
	await.For(t, 10*time.Second, "the body's bytes to be reserved", func() bool { return face.bodies.used.Load() > 0 })
	nc.Close()

	await.For(t, 10*time.Second, "nothing held of the bodies", func() bool {
		return face.bodies.used.Load() == 0 && face.inflight.load() == 0 && sessionlessHandlers() == 0
	})
	if got := postModern(t, ts.URL, "f__echo", `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"},`+modernMeta+`}}`); !strings.Contains(got, "still") {
		t.Errorf("a request after: %s", got)
	}
}
