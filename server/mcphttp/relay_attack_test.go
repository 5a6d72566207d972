package mcphttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// troubledStore is a store whose relay calls a test can slow down or
// fail, as a database that hangs or is gone would.
type troubledStore struct {
	shared.Store
	mu           sync.Mutex
	ended        func(ctx context.Context) // called first by Ended, when set
	endedFirst   bool                      // ended is called after the store answered, instead of before
	failing      bool                      // AppendEvents fails when set
	publish      int                       // Publish calls
	publishFails bool                      // Publish fails at once
	publishHangs bool                      // Publish waits for its ctx to end (or release to close), and fails
	release      chan struct{}             // closed, it ends the hung Publish calls
	hungEnded    int                       // Publish calls that hung and have returned
	reads        int                       // Events calls
	appends      int                       // AppendEvents calls begun
	failRead     int                       // the next Events calls that fail
	appendDelay  time.Duration             // AppendEvents waits this long first
	dropDeleted  chan struct{}             // when set, the notices of a DELETE are lost, and it is told
}

// Subscribe is the store's, but for the notices of a DELETE while
// dropDeleted is set: those are lost, as to a replica whose connection to
// the store broke just then (it hears "" once reconnected), and
// dropDeleted is told.
func (s *troubledStore) Subscribe(ctx context.Context, channel string, fn func(payload string)) {
	s.Store.Subscribe(ctx, channel, func(payload string) {
		s.mu.Lock()
		drop := s.dropDeleted
		s.mu.Unlock()
		if drop == nil || !strings.HasPrefix(payload, "d ") {
			fn(payload)
			return
		}
		fn("")
		select {
		case drop <- struct{}{}:
		default:
		}
	})
}

func (s *troubledStore) Ended(ctx context.Context, key string) (bool, error) {
	s.mu.Lock()
	f, first := s.ended, s.endedFirst
	s.mu.Unlock()
	if first {
		ended, err := s.Store.Ended(ctx, key)
		if f != nil {
			f(ctx)
		}
		return ended, err
	}
	if f != nil {
		f(ctx)
	}
	return s.Store.Ended(ctx, key)
}

func (s *troubledStore) AppendEvents(ctx context.Context, channel string, events []shared.NewEvent) ([]uint64, error) {
	s.mu.Lock()
	s.appends++
	failing, delay := s.failing, s.appendDelay
	s.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if failing {
		return nil, context.DeadlineExceeded
	}
	return s.Store.AppendEvents(ctx, channel, events)
}

func (s *troubledStore) Publish(ctx context.Context, channel, payload string) error {
	s.mu.Lock()
	s.publish++
	hang, fail, release := s.publishHangs, s.publishFails, s.release
	s.mu.Unlock()
	if fail {
		return context.DeadlineExceeded
	}
	if hang {
		select {
		case <-ctx.Done():
		case <-release:
		}
		s.mu.Lock()
		s.hungEnded++
		s.mu.Unlock()
		return ctx.Err()
	}
	return s.Store.Publish(ctx, channel, payload)
}

// troubledReplica is relayReplica with its store wrapped in a
// troubledStore.
func troubledReplica(t testing.TB, url, yaml string) (*Server, string, *troubledStore) {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	ts := &troubledStore{Store: db}
	listening := awaitRelay(t, url)
	h, _ := runHub(t, yaml, nil)
	face := New(h, Options{NoAuth: true, SessionKeys: [][]byte{sealKey1}, Store: ts}, testLogger())
	srv := httptest.NewServer(face)
	t.Cleanup(func() { srv.Close(); face.Close() })
	listening()
	return face, srv.URL, ts
}

// A store that hangs while one session resumes at a replica holds up
// that session's request alone: another session resumes there at once.
func TestRelaySlowStoreHoldsUpOneResumeOnly(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", "") }
	_, baseA := relayReplica(t, url, yaml())
	_, baseB, store := troubledReplica(t, url, yaml())
	slow, quick := newHTTPClient(t, baseA), newHTTPClient(t, baseA)

	// The first resume's round trip hangs until the other session has its
	// answer, then until it times out: the other's answer coming while the
	// first still hangs is the proof, an event a slow machine does not
	// break (a limit of 2 s on the other's wait did).
	entered, answered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store.mu.Lock()
	store.ended = func(ctx context.Context) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			select {
			case <-answered:
			case <-time.After(time.Minute): // bounds a hang, not a timing
				t.Error("another session's resume at B waited for the store's answer about the first")
			}
			<-ctx.Done()
		}
	}
	store.mu.Unlock()
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	done := slow.at(baseB).postAside(ping)
	<-entered
	resp, body := quick.at(baseB).post(ping)
	close(answered)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ping at B: %d %s", resp.StatusCode, body)
	}
	if code := <-done; code != http.StatusOK {
		t.Errorf("the session whose store round trip hung: %d", code)
	}
}

// A store that fails (the database is down) does not cost a session its
// GET stream's notifications while that stream is open at the replica
// whose hub sends them: they go down it, unnumbered by the store (each
// bears the id of the last event the store numbered).
func TestRelayStoreDownGETStreamHereStillServed(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n")
	_, baseA, store := troubledReplica(t, url, yaml)
	a := newHTTPClient(t, baseA)
	events := resumeStream(t.Context(), a, "")
	prime := nextEvent(t, events)
	store.mu.Lock()
	store.failing = true
	store.mu.Unlock()
	if _, body := newHTTPClient(t, baseA).post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":3}}}`); !strings.Contains(body, "flooded") {
		t.Fatalf("flood: %s", body)
	}
	for i := range 3 {
		e := nextEvent(t, events)
		if d := floodData(t, e); d != i || e.id != prime.id {
			t.Fatalf("event %d: %+v, want data %d with id %s", i, e, i, prime.id)
		}
	}
}

// A client that POSTs answers to requests the hub never sent, with ids
// that name another replica (dm-<tag>-<n>), or a storm of cancellations,
// gets a bounded number of them published to the other replicas (each
// is a NOTIFY every replica reads, a large one a row of the store): the
// rest of its answers are refused 429, its cancellations taken here
// only.
func TestRelayFloodOfForgedAnswersBounded(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	faceA, baseA, store := troubledReplica(t, url, flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""))
	clock := stopClock(faceA)
	a := newHTTPClient(t, baseA)
	refused := 0
	const n = 300
	for i := range n {
		resp, _ := a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"dm-0badf00d-%d","result":{}}`, i))
		switch resp.StatusCode {
		case http.StatusAccepted:
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("answer %d: %d", i, resp.StatusCode)
		}
	}
	for i := range n {
		if resp, _ := a.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancellation %d: %d", i, resp.StatusCode)
		}
	}
	store.mu.Lock()
	published := store.publish
	store.mu.Unlock()
	if published > 2*300 || refused == 0 {
		t.Fatalf("%d answers and %d cancellations made %d publishes (%d answers refused)", n, n, published, refused)
	}
	// The session still works, and once its budget refills relays again.
	if resp, body := a.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping: %d %s", resp.StatusCode, body)
	}
	clock.advance(time.Second)
	if resp, body := a.post(`{"jsonrpc":"2.0","id":"dm-0badf00d-refilled","result":{}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("an answer a second later: %d %s", resp.StatusCode, body)
	}
}

// testClock is a face's clock (Server.now) that moves only when the test
// moves it: a relay budget, which refills with time, refills by what the
// test says, not by how slowly a loaded machine runs its loop (at a load
// of 110, 300 POSTs took 100 s, in which the budget refilled them all).
type testClock struct {
	mu sync.Mutex // guards at
	at time.Time
}

// stopClock stops face's clock, before any request reads it.
func stopClock(face *Server) *testClock {
	c := &testClock{at: time.Now()}
	face.now = c.now
	return c
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

func (s *troubledStore) Events(ctx context.Context, stream string, after uint64) ([]shared.Event, uint64, error) {
	s.mu.Lock()
	s.reads++
	fail := s.failRead > 0
	if fail {
		s.failRead--
	}
	s.mu.Unlock()
	if fail {
		return nil, 0, context.DeadlineExceeded
	}
	return s.Store.Events(ctx, stream, after)
}

// A client that opens its GET stream again and again, resuming from its
// first event (each GET takes the stream over, and has the replica read
// up to a megabyte of events from the database), gets a bounded number
// of them: the rest are refused 429.
func TestRelayGETStormBounded(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	faceA, baseA, store := troubledReplica(t, url, flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""))
	stopClock(faceA)
	a := newHTTPClient(t, baseA)
	ctx, cancel := context.WithCancel(t.Context())
	first := nextEvent(t, resumeStream(ctx, a, ""))
	cancel()
	stream, _ := seqOf(t, first.id)
	refused := 0
	const n = 100
	for range n {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseA+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(headerSessionID, a.session)
		req.Header.Set("Last-Event-ID", stream+"-0")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		}
		resp.Body.Close()
		cancel()
	}
	store.mu.Lock()
	reads := store.reads
	store.mu.Unlock()
	t.Logf("%d GETs resuming: %d reads of the store, %d refused", n, reads, refused)
	if refused < n/2 || reads > n/2 {
		t.Fatalf("%d GETs resuming: %d reads of the store, %d refused", n, reads, refused)
	}
}

// A GET that resumes while the store cannot tell the stream's last
// number does not start the stream over: the client does not get again
// the events it had (it is refused 503, and resumes when the store
// answers).
func TestRelayStoreBlipNoReplayFromTheStart(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n")
	faceA, baseA, store := troubledReplica(t, url, yaml)
	a := newHTTPClient(t, baseA)
	ctx, cut := context.WithCancel(t.Context())
	events := resumeStream(ctx, a, "")
	nextEvent(t, events) // priming
	if _, body := newHTTPClient(t, baseA).post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":3}}}`); !strings.Contains(body, "flooded") {
		t.Fatalf("flood: %s", body)
	}
	var last string
	for range 3 {
		last = nextEvent(t, events).id
	}
	cut()
	stream, _ := seqOf(t, last)
	await.For(t, 5*time.Second, "the stream to close", func() bool {
		hs := faceA.sessions.byStream(stream)
		return hs != nil && !hs.hasStandalone()
	})
	store.mu.Lock()
	store.failRead = 1
	store.mu.Unlock()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, baseA+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, a.session)
	req.Header.Set(headerProtocolVersion, "2025-11-25")
	req.Header.Set("Last-Event-ID", last)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		sc := bufio.NewScanner(resp.Body)
		got := make(chan string, 1)
		go func() {
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
					got <- d
					return
				}
			}
		}()
		select {
		case d := <-got:
			t.Fatalf("resumed after %s while the store failed, and got again: %s", last, d)
		case <-time.After(time.Second):
		}
		return
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET while the store failed: %d", resp.StatusCode)
	}
	events = resumeStream(t.Context(), a, last) // the store answers again
	if e := nextEvent(t, events); e.data != "" || e.id != last {
		t.Fatalf("resumed: %+v, want a priming event %s", e, last)
	}
}

// A GET stream whose replica fails once to read the store's new events
// (a blip of the database) gets them all the same, once the store
// answers again, without waiting for another event to wake it.
func TestRelayFailedPullRetried(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n") }
	_, baseA := relayReplica(t, url, yaml())
	_, baseB, storeB := troubledReplica(t, url, yaml())
	a := newHTTPClient(t, baseA)
	events := resumeStream(t.Context(), a.at(baseB), "")
	nextEvent(t, events) // priming
	// The first pull has read the store: the GET's read of the last
	// number, then the pull's.
	await.For(t, 30*time.Second, "the first pull to read the store", func() bool {
		storeB.mu.Lock()
		defer storeB.mu.Unlock()
		return storeB.reads >= 2
	})
	storeB.mu.Lock()
	storeB.failRead = 1
	storeB.mu.Unlock()
	if _, body := newHTTPClient(t, baseA).post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":3}}}`); !strings.Contains(body, "flooded") {
		t.Fatalf("flood: %s", body)
	}
	for i := range 3 {
		if d := floodData(t, nextEvent(t, events)); d != i {
			t.Fatalf("event %d: data %d", i, d)
		}
	}
}

// A replica that closes (it stops, after draining) appends the GET stream
// events still waiting in its queue before it lets go of the store: the
// client that resumes at another replica gets them.
func TestRelayCloseAppendsWhatIsQueued(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	faceA, baseA, store := troubledReplica(t, url, flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""))
	newHTTPClient(t, baseA)
	hs := faceA.sessions.relayed()[0]
	store.mu.Lock()
	store.appendDelay = 300 * time.Millisecond // a store a little slow
	before := store.appends
	store.mu.Unlock()
	const n = 20
	for i := range n {
		if !hs.st.relayed.Enqueue([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)), true) {
			t.Fatal("queue full")
		}
		if i == 0 {
			await.For(t, 30*time.Second, "the first to be appended", func() bool {
				store.mu.Lock()
				defer store.mu.Unlock()
				return store.appends > before
			})
		}
	}
	faceA.Close()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	events, last, err := db.Events(t.Context(), hs.stream, 0)
	if err != nil || len(events) != n || last != n {
		t.Fatalf("kept after close: %d events, last %d, %v; want %d", len(events), last, err, n)
	}
}

// What held, kept as tests: a session DELETEd at one replica ends its
// GET stream open at another; a GET that resumes with an event id of
// another session (or an absurd number) gets live events only, none of
// the other session's.
func TestRelayDeleteEndsGETStreamElsewhereAndIDsStayOwn(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n") }
	faceA, baseA := relayReplica(t, url, yaml())
	faceB, baseB := relayReplica(t, url, yaml())
	victim, mallory := newHTTPClient(t, baseA), newHTTPClient(t, baseA)
	vEvents := resumeStream(t.Context(), victim, "")
	vPrime := nextEvent(t, vEvents)
	if _, body := newHTTPClient(t, baseA).post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":2}}}`); !strings.Contains(body, "flooded") {
		t.Fatalf("flood: %s", body)
	}
	nextEvent(t, vEvents)
	nextEvent(t, vEvents)
	// The flood's log messages reach every session through the hub's
	// event loop, which may be after the call's answer: mallory's are in
	// the store before its GETs below, which must get nothing live.
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := faceA.sealer.open(mallory.session, httpguard.NoAuthCredential, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mStream := faceA.sealer.streamName(st.key, st.Nonce)
	await.For(t, 30*time.Second, "mallory's two events in the store", func() bool {
		_, last, err := db.Events(t.Context(), mStream, 0)
		return err == nil && last == 2
	})
	vStream, _ := seqOf(t, vPrime.id)
	for _, lastID := range []string{vStream + "-0", vStream + "-1", "x-99999999999999999999", vStream + "-18446744073709551615"} {
		ctx, cut := context.WithCancel(t.Context())
		events := resumeStream(ctx, mallory.at(baseB), lastID)
		prime := nextEvent(t, events)
		if s, _ := seqOf(t, prime.id); s == vStream || prime.data != "" {
			t.Fatalf("Last-Event-ID %s: %+v", lastID, prime)
		}
		// Nothing of the victim's comes in a while. Mallory's own
		// session's may: the flood's messages reach every session, and
		// those for mallory's can be kept in the store after this GET
		// began, to come live.
		for window := time.After(200 * time.Millisecond); window != nil; {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("Last-Event-ID %s: the GET stream ended", lastID)
				}
				if s, _ := seqOf(t, e.id); s == vStream {
					t.Fatalf("Last-Event-ID %s replayed %+v", lastID, e)
				}
			case <-window:
				window = nil
			}
		}
		cut()
		await.For(t, 30*time.Second, "B to let the stream go", func() bool {
			for _, hs := range faceB.sessions.relayed() {
				if hs.hasStandalone() {
					return false
				}
			}
			return true
		})
	}

	onB := resumeStream(t.Context(), victim.at(baseB), vPrime.id)
	nextEvent(t, onB) // priming
	req, _ := http.NewRequest(http.MethodDelete, baseA+"/mcp", nil)
	req.Header.Set(headerSessionID, victim.session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	resp.Body.Close()
	deadline := time.After(time.Minute) // bounds a hang, not a timing
	for {
		select {
		case _, ok := <-onB:
			if !ok {
				return // ended
			}
		case <-deadline:
			t.Fatal("the GET stream at B outlived the session's DELETE at A")
		}
	}
}

// The connection a replica LISTENs on, cut by the database (a restart, a
// proxy's idle timeout), comes back, and the GET stream open there gets
// the events appended meanwhile at another replica, once each, in order.
func TestRelayListenDropReplaysEvents(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-flood"]`+"\n") }
	_, baseA := relayReplica(t, url, yaml())
	_, baseB := relayReplica(t, url, yaml())
	a := newHTTPClient(t, baseA)
	events := resumeStream(t.Context(), a.at(baseB), "")
	nextEvent(t, events) // priming
	db, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	// Every LISTENing backend is cut (A's too); the flood follows at once.
	cutListeners := func() int {
		n := 0
		rows, err := db.Query(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			n++
		}
		rows.Close()
		return n
	}
	if n := cutListeners(); n < 2 {
		t.Fatalf("cut %d listeners", n)
	}
	if _, body := newHTTPClient(t, baseA).post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":3}}}`); !strings.Contains(body, "flooded") {
		t.Fatalf("flood: %s", body)
	}
	for i := range 3 {
		if d := floodData(t, nextEvent(t, events)); d != i {
			t.Fatalf("event %d: data %d", i, d)
		}
	}
	select {
	case e := <-events:
		t.Fatalf("more than was sent: %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

// A session DELETEd at one replica while another is resuming it (the
// store told that one "not ended" a moment before the DELETE was
// recorded) is not left live there: the notice of the DELETE, heard
// while the session was not yet registered, ends it once it is.
func TestRelayDeleteDuringResumeEndsIt(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", "") }
	_, baseA := relayReplica(t, url, yaml())
	faceB, baseB, storeB := troubledReplica(t, url, yaml())
	// Both relays LISTEN once their replicas are made (awaitRelay): a
	// NOTIFY before is lost (a late replica learns of a DELETE from the
	// store when it resumes, which is what this test holds up).
	victim := newHTTPClient(t, baseA)
	entered, releaseCh := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(releaseCh) })
	// Released however the test ends: B's replica closes (a cleanup
	// registered before this one) only once its held request has ended.
	t.Cleanup(release)
	var once sync.Once
	storeB.mu.Lock()
	storeB.ended = func(ctx context.Context) {
		once.Do(func() { // the store has answered "not ended"; then the DELETE
			close(entered)
			<-releaseCh
		})
	}
	storeB.endedFirst = true
	storeB.mu.Unlock()
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	done := victim.at(baseB).postAside(ping)
	<-entered
	req, _ := http.NewRequest(http.MethodDelete, baseA+"/mcp", nil)
	req.Header.Set(headerSessionID, victim.session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE at A: %v %v", err, resp)
	}
	resp.Body.Close()
	// Both relays listen (above), so B hears of the DELETE while its resume
	// waits on the store: the order this test is about. Then B must come
	// to refuse the session (a resumed session that outlived the DELETE
	// would answer for good).
	await.For(t, 30*time.Second, "B to hear of the DELETE", func() bool {
		faceB.deleted.mu.Lock()
		defer faceB.deleted.mu.Unlock()
		return len(faceB.deleted.order) > 0
	})
	release()
	<-done
	await.For(t, 30*time.Second, "B to refuse the session (404 to a ping)", func() bool {
		resp, _ := victim.at(baseB).post(ping)
		return resp.StatusCode == http.StatusNotFound
	})
	await.For(t, 5*time.Second, "B to hold no session", func() bool { return sessionCount(faceB) == 0 })
}

// A session DELETEd at one replica while another is resuming it, whose
// notice of the DELETE that one never hears (its connection to the store
// broke just then), is not left live there: once the session is
// registered, and any later notice would end it, the store is asked
// again.
func TestRelayDeleteMissedDuringResumeEndsIt(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	yaml := func() string { return flatFakeYAML(t.TempDir(), "call_timeout: 5s", "") }
	_, baseA := relayReplica(t, url, yaml())
	faceB, baseB, storeB := troubledReplica(t, url, yaml()) // both relays LISTEN (awaitRelay)
	victim := newHTTPClient(t, baseA)
	entered, releaseCh := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(releaseCh) })
	t.Cleanup(release) // B's replica closes only once its held request has ended
	dropped := make(chan struct{}, 1)
	var once sync.Once
	storeB.mu.Lock()
	storeB.ended = func(ctx context.Context) {
		once.Do(func() { // the store has answered "not ended"; then the DELETE
			close(entered)
			<-releaseCh
		})
	}
	storeB.endedFirst = true
	storeB.dropDeleted = dropped
	storeB.mu.Unlock()
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	done := victim.at(baseB).postAside(ping)
	<-entered
	req, _ := http.NewRequest(http.MethodDelete, baseA+"/mcp", nil)
	req.Header.Set(headerSessionID, victim.session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE at A: %v %v", err, resp)
	}
	resp.Body.Close()
	select {
	case <-dropped: // B missed the notice
	case <-time.After(30 * time.Second):
		t.Fatal("the notice of the DELETE did not reach B's subscription")
	}
	release()
	if got := <-done; got != http.StatusNotFound {
		t.Errorf("the ping B resumed the session for: %d, want 404 (the session was DELETEd)", got)
	}
	if resp, body := victim.at(baseB).post(ping); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a ping after: %d %s, want 404", resp.StatusCode, body)
	}
	if n := sessionCount(faceB); n != 0 {
		t.Errorf("B holds %d sessions, want none", n)
	}
}

// A cancellation POSTed to the replica where its call runs cancels it at
// once, however slow the store is to pass it on to the other replicas.
func TestRelayCancelHereNotHeldUpByTheStore(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	faceA, baseA, store := troubledReplica(t, url, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""))
	c := newHTTPClient(t, baseA)
	awaitInflight(t, faceA, 0)
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		req, _ := http.NewRequest(http.MethodPost, baseA+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"f__hang","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerSessionID, c.session)
		if resp, err := testClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	awaitInflight(t, faceA, 1)
	release, sent := make(chan struct{}), make(chan struct{})
	store.mu.Lock()
	store.publishHangs, store.release = true, release
	store.mu.Unlock()
	go func() {
		defer close(sent)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h"}}`)
	}()
	// The notification's POST is answered once the publish ends: the
	// test ends it, rather than leave the server's Close to wait out the
	// relay's publish timeout for that connection.
	defer func() {
		close(release)
		<-sent
	}()
	// The call must end while the store's publish of the cancellation
	// still hangs: not after it gave up. No timing is compared, so a
	// busy machine cannot fail this; the deadline only ends a test whose
	// call was never cancelled (its call_timeout is 10 minutes).
	select {
	case <-hung:
		store.mu.Lock()
		ended := store.hungEnded
		store.mu.Unlock()
		if ended != 0 {
			t.Fatalf("the call ended only after %d hung publish(es) of the store gave up", ended)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the call was not cancelled")
	}
}

// An answer for another replica that the store could not pass on (the
// database is down) is not acknowledged 202 as if it had been: the client
// is told 503, and may send it again.
func TestRelayAnswerNotPassedOnIsNotAccepted(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	_, baseA, store := troubledReplica(t, url, flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""))
	a := newHTTPClient(t, baseA)
	store.mu.Lock()
	store.publishFails = true
	store.mu.Unlock()
	if resp, body := a.post(`{"jsonrpc":"2.0","id":"dm-0badf00d-1","result":{}}`); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an answer the store could not pass on: %d %s", resp.StatusCode, body)
	}
}
