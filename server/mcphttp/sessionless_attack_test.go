package mcphttp

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
// a request answered without a session and are in a write.
func sessionlessWriters() int {
	return goroutines(func(g string) bool {
		return strings.Contains(g, "mcphttp.(*oneCall).flush(") && strings.Contains(g, "mcphttp.(*sseWriter).events(")
	})
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
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(echo))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerProtocolVersion, "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "f__echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(buf[:n]), `"text":"still"`) {
			t.Errorf("a call while a stream is not read: %s %.300s", resp.Status, buf[:n])
		}
	}

	face, ts := serveHTTPSmall(t, fakeHub(t), Options{writeTimeout: beyond}, nil)
	// closed hears the quick face's connections closed, by the client's
	// address.
	closed := make(chan string, 64)
	quick, qts := serveHTTPSmall(t, fakeHub(t), Options{writeTimeout: time.Millisecond}, func(s *http.Server) {
		s.ConnState = func(c net.Conn, state http.ConnState) {
			if state == http.StateClosed {
				select {
				case closed <- c.RemoteAddr().String():
				default:
				}
			}
		}
	})
	before := liveGoroutines()
	goes, stays := stall(ts.URL), stall(ts.URL)
	waitFor(t, 10*time.Second, "both calls' writers stuck in a write", func() bool { return sessionlessWriters() == 2 })
	answered(ts.URL)
	if n := face.inflight.load(); n != 2 {
		t.Errorf("%d requests in flight, want the 2 whose streams are not read", n)
	}
	goes.Close()
	waitFor(t, 5*time.Second, "the handler to end once its client went", func() bool { return sessionlessHandlers() == 1 })
	stays.Close()
	waitFor(t, 5*time.Second, "the handler to end once its client went", func() bool { return sessionlessHandlers() == 0 })
	if n := face.inflight.load(); n != 0 {
		t.Errorf("%d requests in flight once their clients went", n)
	}

	// The client stays and does not read: the write deadline ends it.
	nc := stall(qts.URL)
	wait := time.NewTimer(10 * time.Second * slowMachine)
	defer wait.Stop()
	for addr := ""; addr != nc.LocalAddr().String(); {
		select {
		case addr = <-closed:
		case <-wait.C:
			t.Fatal("the server did not close the connection of a request whose client did not read, past the write deadline")
		}
	}
	waitFor(t, 10*time.Second, "the handler to end past the write deadline", func() bool {
		return sessionlessHandlers() == 0 && quick.inflight.load() == 0
	})
	answered(qts.URL)
	nc.Close()
	http.DefaultClient.CloseIdleConnections()
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
	resp, err := http.DefaultClient.Do(req)
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
