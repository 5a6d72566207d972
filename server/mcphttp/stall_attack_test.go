package mcphttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
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

// quickFace serves a hub's face whose writes time out after a
// millisecond; closed hears its connections closed, by the client's
// address.
func quickFace(t *testing.T) (face *Server, ts *httptest.Server, closed <-chan string) {
	c := make(chan string, 64)
	face, ts = serveHTTPSmall(t, patientHub(t), Options{writeTimeout: time.Millisecond}, func(s *http.Server) {
		s.ConnState = func(conn net.Conn, state http.ConnState) {
			if state == http.StateClosed {
				select {
				case c <- conn.RemoteAddr().String():
				default: // the test no longer listens
				}
			}
		}
	})
	return face, ts, c
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
//
// Which of the two ended a writer is told apart by two faces, not by the
// clock: on the first a write's deadline is past the test's own, so a
// writer that ends there was ended by its client going; on the second
// (quick) it is a millisecond, and a writer that ends there while its
// client holds the connection open and reads nothing was ended by it
// (the stream the client then reads is cut short of the answer).
func TestAttackPOSTStreamNotRead(t *testing.T) {
	beyond := time.Hour
	if d, ok := t.Deadline(); ok {
		beyond = time.Until(d) + time.Minute
	}
	face, ts := serveHTTPSmall(t, patientHub(t), Options{writeTimeout: beyond}, nil)
	quick, qts, closed := quickFace(t)
	goes, held, other := newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL)
	stays := newHTTPClient(t, qts.URL)
	before := liveGoroutines()
	text := strings.Repeat("p", 256<<10) // in each progress message and in the answer
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__progress","arguments":{"text":"` + text + `"},"_meta":{"progressToken":"t"}}}`
	// stall POSTs the call in c's session on the first face and waits
	// until the call is answered and the POST's writer is stuck in a
	// write: it stays stuck until its client goes.
	stall := func(c *httpClient, writers int) (net.Conn, *httpSession) {
		t.Helper()
		nc := stalledPOST(t, ts.URL, c.session, call)
		hs := face.sessions.lookup(c.session)
		await.For(t, 10*time.Second, "the call answered, its POST's writer stuck in a write", func() bool {
			return hs.Answering() == 0 && hs.st.open() == 1 && postWriters() == writers
		})
		return nc, hs
	}
	ncHeld, hsHeld := stall(held, 1)
	ncGoes, hsGoes := stall(goes, 2)

	for _, c := range []*httpClient{other, goes, held} {
		if _, body := c.post(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"}}}`); !strings.Contains(body, `"text":"still"`) {
			t.Errorf("a call while POST streams are not read: %.300s", body)
		}
	}

	// The client goes: its writer's write fails at once, and the other
	// writer, whose client is still there, is still stuck.
	ncGoes.Close()
	await.For(t, 5*time.Second, "the POST's handler to end once its client went", func() bool { return hsGoes.st.open() == 0 })
	if hsHeld.st.open() != 1 || postWriters() != 1 {
		t.Errorf("another client's going ended a writer whose client is still there: %d POSTs open, %d writers", hsHeld.st.open(), postWriters())
	}
	ncHeld.Close()
	await.For(t, 5*time.Second, "the POST's handler to end once its client went", func() bool { return hsHeld.st.open() == 0 })

	// The client stays and does not read: the write deadline ends the
	// writer, and the POST's handler with it (the server closes the
	// connection, whose response it could not finish); the call is
	// answered all the same.
	ncStays := stalledPOST(t, qts.URL, stays.session, call)
	hsStays := quick.sessions.lookup(stays.session)
	wait := time.NewTimer(10 * time.Second * await.Slow)
	defer wait.Stop()
	for addr := ""; addr != ncStays.LocalAddr().String(); {
		select {
		case addr = <-closed:
		case <-wait.C:
			t.Fatal("the server did not close the connection of a POST whose client did not read, past the write deadline")
		}
	}
	await.For(t, 10*time.Second, "the call answered", func() bool { return hsStays.Answering() == 0 && hsStays.st.open() == 0 })
	if _, body := stays.post(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"still"}}}`); !strings.Contains(body, `"text":"still"`) {
		t.Errorf("the session's next call once its POST stream was cut: %.300s", body)
	}
	// What the client reads now is what the writer wrote before the
	// deadline: the stream cut short (inside the chunked body, or before
	// the headers), the answer never written.
	ncStays.SetReadDeadline(time.Now().Add(10 * time.Second * await.Slow))
	if resp, err := http.ReadResponse(bufio.NewReader(ncStays), nil); err == nil {
		got, err := io.ReadAll(resp.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || bytes.Contains(got, []byte(`"id":7,"result"`)) {
			t.Errorf("the stream of a client that did not read (%d bytes, %v): want it cut before the answer", len(got), err)
		}
	}
	ncStays.Close()
	if n := postWriters(); n != 0 {
		t.Errorf("%d POST stream writers left", n)
	}
	testClient.CloseIdleConnections()
	waitGoroutines(t, before)
}
