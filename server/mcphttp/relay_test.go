package mcphttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// relayReplica serves a hub of yaml as a replica on the store at url,
// with sealed session ids, and returns its face and base URL.
func relayReplica(t testing.TB, url, yaml string) (*Server, string) {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close) // after the face: cleanups run last first
	listening := awaitRelay(t, url)
	h, _ := runHub(t, yaml, nil)
	face := New(h, Options{NoAuth: true, SessionKeys: [][]byte{sealKey1}, Store: db}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	listening()
	return face, ts.URL
}

// awaitRelay counts the relays listening on the database at url and
// returns a wait until one more does: a NOTIFY before a replica's relay
// LISTENs is lost to it, so a test starts once the replica it makes
// listens.
func awaitRelay(t testing.TB, url string) (wait func()) {
	t.Helper()
	pc, err := pgconn.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close(context.Background()) })
	before := relayListeners(t, pc)
	return func() {
		t.Helper()
		await.For(t, 30*time.Second, "the replica's relay to listen", func() bool { return relayListeners(t, pc) > before })
	}
}

// relayListeners counts the relays LISTENing on pc's database.
func relayListeners(t testing.TB, pc *pgconn.PgConn) int {
	t.Helper()
	res := pc.ExecParams(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle' AND query LIKE 'LISTEN %dynamic_mcp_relay%'`, nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	got, _ := strconv.Atoi(string(res.Rows[0][0]))
	return got
}

// awaitInflight waits until face's one relayed session has n requests
// in flight. A request's answer is counted until its writing ends, after
// the client may have it: a test waits for 0 before it sends the request
// whose 1 it waits for, or the 1 may be the last answer's.
func awaitInflight(t testing.TB, face *Server, n int) {
	t.Helper()
	await.For(t, 5*time.Second, fmt.Sprintf("%d requests in flight", n), func() bool {
		hs := face.sessions.relayed()
		return len(hs) == 1 && hs[0].conn.Inflight() == n
	})
}

// at is c's session as seen through another replica's base URL.
func (c *httpClient) at(base string) *httpClient {
	return &httpClient{t: c.t, base: base, session: c.session}
}

// elicitingClient is a new session at base of a client that can answer
// elicitations, speaking protocol version.
func elicitingClient(t *testing.T, base, version string) *httpClient {
	c := &httpClient{t: t, base: base}
	c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// ask POSTs a call of f__ask in c's session at c.base and reads its
// answer, handing answer the id of each elicitation that comes down its
// stream: the call's result line, "" when none came.
func (c *httpClient) ask(answer func(id string)) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok && strings.HasPrefix(sc.Text(), "{") {
			line, ok = sc.Text(), true // a plain JSON answer
		}
		switch {
		case !ok:
		case strings.Contains(line, `"method":"elicitation/create"`):
			answer(requestID(line))
		case strings.Contains(line, `"id":"ask"`):
			return line
		}
	}
	return ""
}

// requestID is the id of msg, a request of the hub's, as JSON.
func requestID(msg string) string {
	id := msg[strings.Index(msg, `"id":`)+5:]
	return id[:strings.IndexAny(id, ",}")]
}

// postAside POSTs body in c's session from a goroutine of its own; the
// channel gets the answer's status, or 0 if the POST failed.
func (c *httpClient) postAside(body string) <-chan int {
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerSessionID, c.session)
		resp, err := testClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

// seqOf is the number of an event id "<stream>-<seq>".
func seqOf(t *testing.T, id string) (string, uint64) {
	t.Helper()
	i := strings.LastIndexByte(id, '-')
	n, err := strconv.ParseUint(id[i+1:], 10, 64)
	if i < 0 || err != nil {
		t.Fatalf("not an event id: %q", id)
	}
	return id[:i], n
}

// With a store, a session's GET stream gets the notifications a hub of
// another replica sends it (round robin: the session is live on both),
// numbered by the store; cut, it opens again with Last-Event-ID at the
// other replica and gets every notification sent meanwhile from the
// store, once each, in order, then the live ones; the ids go up through
// it all, with one stream name on both replicas.
func TestRelayGETStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n") }
	_, baseA := relayReplica(t, url, yaml())
	faceB, baseB := relayReplica(t, url, yaml())
	a := newHTTPClient(t, baseA) // made on A, live there
	flooder := newHTTPClient(t, baseA)
	flood := func(n int) {
		t.Helper()
		if _, body := flooder.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":%d}}}`, n)); !strings.Contains(body, "flooded") {
			t.Fatalf("flood: %s", body)
		}
	}
	var stream string
	var seq uint64
	expect := func(events <-chan sseEvent, n int) (last string) {
		t.Helper()
		for i := range n {
			e := nextEvent(t, events)
			if d := floodData(t, e); d != i {
				t.Fatalf("event %d of %d: data %d (%+v)", i, n, d, e)
			}
			s, q := seqOf(t, e.id)
			if s != stream || q <= seq {
				t.Fatalf("event id %s after %s-%d", e.id, stream, seq)
			}
			seq, last = q, e.id
		}
		return last
	}

	ctx, cut := context.WithCancel(t.Context())
	events := resumeStream(ctx, a.at(baseB), "") // the GET stream on B
	prime := nextEvent(t, events)
	if prime.data != "" {
		t.Fatalf("not a priming event: %+v", prime)
	}
	stream, seq = seqOf(t, prime.id)
	flood(3) // A's hub sends them to the session's copy on A
	last := expect(events, 3)
	cut()
	await.For(t, 5*time.Second, "B's stream to close", func() bool {
		hs := faceB.sessions.byStream(stream)
		return hs != nil && !hs.hasStandalone()
	})

	flood(4)                                    // while the client is away
	events = resumeStream(t.Context(), a, last) // at A, from the store
	if e := nextEvent(t, events); e.data != "" || e.id != last {
		t.Fatalf("resumed: %+v, want a priming event %s", e, last)
	}
	expect(events, 4)
	flood(2)
	expect(events, 2)
	select {
	case e := <-events:
		t.Fatalf("more than was sent: %+v", e)
	case <-time.After(200 * time.Millisecond):
	}
}

// sessionByStream is the session whose GET stream is named stream.

// With a store, DELETE at one replica ends the session everywhere: the
// replica that had it live ends its copy, and none resumes it (404).
func TestRelayDeleteEndsEverywhere(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", "") }
	_, baseA := relayReplica(t, url, yaml())
	faceB, baseB := relayReplica(t, url, yaml())
	_, baseC := relayReplica(t, url, yaml())
	a := newHTTPClient(t, baseA)
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	if resp, body := a.at(baseB).post(ping); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping at B: %d %s", resp.StatusCode, body)
	}
	if n := sessionCount(faceB); n != 1 {
		t.Fatalf("B holds %d sessions", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, baseA+"/mcp", nil)
	req.Header.Set(headerSessionID, a.session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE at A: %v %v", err, resp)
	}
	resp.Body.Close()
	await.For(t, 5*time.Second, "B to end its copy", func() bool { return sessionCount(faceB) == 0 })
	for name, base := range map[string]string{"B": baseB, "C": baseC, "A": baseA} {
		if resp, body := a.at(base).post(ping); resp.StatusCode != http.StatusNotFound {
			t.Errorf("ping at %s after DELETE: %d %s", name, resp.StatusCode, body)
		}
	}
}

// With a store, the client's answer to an elicitation that a call on
// replica A sent reaches A though the client POSTs it to B; a
// notifications/cancelled POSTed to B cancels a call in flight on A; a
// log level set at B holds at A.
func TestRelayAnswerReachesTheAskingReplica(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { // the call timeout bounds a hang, not a timing
		return flatFakeYAML(t.TempDir(), fmt.Sprintf("call_timeout: %s", 10*time.Second*await.Slow), "    isolation: per-session\n")
	}
	faceA, baseA := relayReplica(t, url, yaml())
	_, baseB := relayReplica(t, url, yaml())
	c := elicitingClient(t, baseA, "2025-06-18")
	onB := c.at(baseB)

	result := c.ask(func(id string) {
		if !strings.HasPrefix(id, `"dm-`) {
			t.Errorf("the hub's request id %s names no replica", id)
		}
		if r, body := onB.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"ada"}}}`, id)); r.StatusCode != http.StatusAccepted {
			t.Fatalf("the answer at B: %d %s", r.StatusCode, body)
		}
	})
	if !strings.Contains(result, "ada") {
		t.Fatalf("the call's result: %s", result)
	}

	// A call in flight on A, cancelled at B.
	awaitInflight(t, faceA, 0)
	hung := c.postAside(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"f__hang","arguments":{}}}`)
	awaitInflight(t, faceA, 1)
	if r, body := onB.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h"}}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel at B: %d %s", r.StatusCode, body)
	}
	select {
	case code := <-hung:
		if code != http.StatusAccepted {
			t.Errorf("the cancelled call's POST: %d, want 202", code)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the call on A was not cancelled by the cancellation POSTed to B")
	}

	// A log level set at B.
	if r, body := onB.post(`{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"error"}}`); r.StatusCode != http.StatusOK {
		t.Fatalf("setLevel at B: %d %s", r.StatusCode, body)
	}
	await.For(t, 5*time.Second, "A's copy of the session to log at error", func() bool {
		return faceA.sessions.relayed()[0].sess.State().LogLevel == "error"
	})
}

// An answer relayed goes to its own session only: another session (of
// the same credential) that POSTs an answer with the id of a request the
// hub sent the first, at another replica, answers nothing; the first
// session's own answer, at that replica too, does.
func TestRelayAnswerGoesToItsOwnSessionOnly(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string {
		return flatFakeYAML(t.TempDir(), "call_timeout: 10s", "    isolation: per-session\n")
	}
	faceA, baseA := relayReplica(t, url, yaml())
	_, baseB := relayReplica(t, url, yaml())
	victim, other := elicitingClient(t, baseA, "2025-06-18"), elicitingClient(t, baseA, "2025-06-18")
	other.post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`) // live on A too
	other.at(baseB).post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)

	result := victim.ask(func(id string) {
		answer := `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":%q}}}`
		other.at(baseB).post(fmt.Sprintf(answer, id, "mallory"))
		other.post(fmt.Sprintf(answer, id, "mallory"))
		// What would be taken is taken by now: A's dispatcher, which
		// takes B's payloads in order, has acted on the one after the
		// answer B passed on (other's log level, set at B), and other's
		// Conn at A has read the answer POSTed there (it reads in order).
		other.at(baseB).post(`{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"error"}}`)
		await.For(t, 30*time.Second, "A to act on what B passed on", func() bool {
			for _, hs := range faceA.sessions.relayed() {
				if hs.sess.State().LogLevel == "error" {
					return true
				}
			}
			return false
		})
		other.post(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		victim.at(baseB).post(fmt.Sprintf(answer, id, "ada"))
	})
	if !strings.Contains(result, "ada") || strings.Contains(result, "mallory") {
		t.Fatalf("the call's result: %s", result)
	}
}

// A stream's name is the same for every replica with the key that
// sealed the session's id, another for another key, and not the nonce.
func TestRelayStreamName(t *testing.T) {
	t.Parallel()
	one, _ := newSealer([][]byte{sealKey1, sealKey2})
	again, _ := newSealer([][]byte{sealKey1})
	const nonce = "0123456789abcdef0123456789abcdef"
	a, b := one.streamName(0, nonce), again.streamName(0, nonce)
	if a != b || len(a) != 24 || strings.Contains(a, nonce[:8]) {
		t.Fatalf("names of one nonce under one key: %q %q", a, b)
	}
	if c := one.streamName(1, nonce); c == a {
		t.Fatal("the same name under another key")
	}
	if d := one.streamName(0, nonce[:31]+"0"); d == a {
		t.Fatal("the same name for another nonce")
	}
	id, err := one.seal(sealedState{Nonce: nonce, Expires: time.Now().Add(time.Hour).Unix()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := again.open(id, "", time.Now()); err != nil || st.key != 0 || again.streamName(st.key, st.Nonce) != a {
		t.Fatalf("opened at another replica: %+v %v", st, err)
	}
}

// A request of the hub's with no POST stream to go down at its replica
// (the call's POST takes JSON only) goes down the session's GET stream,
// open at another replica, through the store; the client's answer,
// POSTed there, comes back to the replica that asked, and the call
// completes.
func TestRelayRequestDownAGETStreamElsewhere(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string {
		return flatFakeYAML(t.TempDir(), "call_timeout: 10s", "    isolation: per-session\n")
	}
	_, baseA := relayReplica(t, url, yaml())
	_, baseB := relayReplica(t, url, yaml())
	c := elicitingClient(t, baseA, "2025-11-25")
	onB := c.at(baseB)
	events := resumeStream(t.Context(), onB, "") // the GET stream, at B
	nextEvent(t, events)                         // its priming event

	answered := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, baseA+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json") // no stream for the hub's request here
		req.Header.Set(headerSessionID, c.session)
		resp, err := testClient.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	e := nextEvent(t, events)
	if !strings.Contains(e.data, `"method":"elicitation/create"`) {
		t.Fatalf("on the GET stream at B: %+v", e)
	}
	id := requestID(e.data)
	if r, body := onB.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"ada"}}}`, id)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the answer at B: %d %s", r.StatusCode, body)
	}
	select {
	case got := <-answered:
		if !strings.Contains(got, "ada") {
			t.Fatalf("the call's answer: %s", got)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the call did not complete")
	}
}
