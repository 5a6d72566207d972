package mcphttp

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stalledPOST POSTs body in session on a connection of its own, with a
// small receive buffer, and never reads the response.
func stalledPOST(t *testing.T, base, session, body string) net.Conn {
	t.Helper()
	nc := dialSlowReader(t, base)
	fmt.Fprintf(nc, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(base, "http://"), headerSessionID, session, len(body), body)
	return nc
}

// postWriters counts the goroutines that write a POST's event stream
// while its request is served (serveHere's) and are in a write.
func postWriters() int {
	return goroutines(func(g string) bool {
		return strings.Contains(g, "mcphttp.(*Server).respond(") && strings.Contains(g, "mcphttp.(*sseWriter).events(")
	})
}

// A client POSTs a call that sends progress before its answer, far more
// than the sockets hold, and stops reading while the goroutine that
// writes the POST's stream (serveHere's) writes it. Nothing freezes: the
// call is answered (its handler waits only for the writer), another
// session and the same session's next request are answered; the writer
// ends, and the POST's handler with it, once the client goes (one
// connection closed) or the write deadline passes (another left open);
// no goroutine is left.
func TestAttackPOSTStreamNotRead(t *testing.T) {
	h := fakeHub(t)
	face, ts := serveHTTP(t, h)
	goes, stays, other := newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL)
	before := liveGoroutines()
	text := strings.Repeat("p", 256<<10) // in each progress message and in the answer
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__progress","arguments":{"text":"` + text + `"},"_meta":{"progressToken":"t"}}}`
	// others counts the writers of POSTs stalled before (the first one's
	// may have met its write deadline on a slow machine meanwhile).
	stall := func(c *httpClient, others func() int) (net.Conn, *httpSession, time.Time) {
		t.Helper()
		sent := time.Now()
		nc := stalledPOST(t, ts.URL, c.session, call)
		hs := face.sessions.lookup(c.session)
		waitFor(t, 10*time.Second, "the call answered, its POST's writer stuck in a write", func() bool {
			return postWriters() == others()+1 && hs.Answering() == 0 && hs.st.open() == 1
		})
		return nc, hs, sent
	}
	ncStays, hsStays, _ := stall(stays, func() int { return 0 })
	ncGoes, hsGoes, sent := stall(goes, hsStays.st.open)

	for _, c := range []*httpClient{other, goes, stays} {
		if _, body := c.post(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"}}}`); !strings.Contains(body, `"text":"still"`) {
			t.Errorf("a call while POST streams are not read: %.300s", body)
		}
	}

	// The client goes: its writer's write fails at once. The proof that
	// the close ended it, not its write deadline: it ended before that
	// deadline could pass, or while the other's, which passes first (its
	// write got stuck before this POST was sent), had not passed yet.
	ncGoes.Close()
	staysOpen := false
	waitFor(t, 5*time.Second, "the POST's handler to end once its client went", func() bool {
		if hsGoes.st.open() != 0 {
			return false
		}
		staysOpen = hsStays.st.open() == 1 // it only goes from 1 to 0
		return true
	})
	if d := time.Since(sent); d >= writeTimeout && !staysOpen {
		t.Errorf("the POST's handler ended %v after the POST, after the other's write deadline: not before its own could end it", d)
	}
	// The client stays and does not read: the write deadline ends it.
	waitFor(t, 3*writeTimeout, "the POST's handler to end at the write deadline", func() bool { return hsStays.st.open() == 0 })
	ncStays.Close()
	if n := postWriters(); n != 0 {
		t.Errorf("%d POST stream writers left", n)
	}
	http.DefaultClient.CloseIdleConnections()
	waitGoroutines(t, before)
}
