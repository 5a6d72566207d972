package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// sseEvent is one event of a GET stream: its id and message ("" for a
// priming event).
type sseEvent struct{ id, data string }

// resumeStream opens c's GET stream as a 2025-11-25 client, with
// Last-Event-ID lastID when not "", and returns its events, until ctx
// ends.
func resumeStream(ctx context.Context, c *httpClient, lastID string) <-chan sseEvent {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, c.session)
	req.Header.Set(headerProtocolVersion, "2025-11-25")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET: %d", resp.StatusCode)
	}
	events := make(chan sseEvent, 1000)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.id != "" || e.data != "" {
					events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return events
}

func nextEvent(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the GET stream ended")
		}
		return e
	case <-time.After(30 * time.Second): // a bound for a slow machine, not a guess
		t.Fatal("nothing on the GET stream in 30s")
		return sseEvent{}
	}
}

// floodData is the data of a fake upstream's flood log message.
func floodData(t *testing.T, e sseEvent) int {
	t.Helper()
	var m struct {
		Method string `json:"method"`
		Params struct {
			Data int `json:"data"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(e.data), &m); err != nil || m.Method != "notifications/message" || e.id == "" {
		t.Fatalf("not a flood log message with an id: %+v", e)
	}
	return m.Params.Data
}

// A client whose GET stream is cut opens it again with Last-Event-ID and
// gets exactly the notifications sent while it was gone, in order, then
// the live ones; another session given its ids gets none of them.
func TestGETStreamResumes(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-flood")
	face, ts := serveHTTP(t, h)
	a := newHTTPClient(t, ts.URL)
	b := newHTTPClient(t, ts.URL)
	flood := func(n int) {
		t.Helper()
		if _, body := b.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":%d}}}`, n)); !strings.Contains(body, "flooded") {
			t.Fatalf("flood: %s", body)
		}
	}
	expect := func(events <-chan sseEvent, n int) (last string) {
		t.Helper()
		for i := range n {
			e := nextEvent(t, events)
			if d := floodData(t, e); d != i {
				t.Fatalf("event %d of %d: data %d (%+v)", i, n, d, e)
			}
			last = e.id
		}
		return last
	}

	ctx, cut := context.WithCancel(t.Context())
	events := resumeStream(ctx, a, "")
	if prime := nextEvent(t, events); prime.id == "" || prime.data != "" {
		t.Fatalf("first event is not a priming event: %+v", prime)
	}
	flood(3)
	last := expect(events, 3)
	cut()
	await.For(t, 5*time.Second, "the stream to close", func() bool { return !face.sessions.lookup(a.session).hasStandalone() })

	flood(4) // while a is gone
	events = resumeStream(t.Context(), a, last)
	expect(events, 4)
	flood(2)
	last = expect(events, 2)
	select {
	case e := <-events:
		t.Fatalf("more than was sent: %+v", e)
	case <-time.After(100 * time.Millisecond):
	}

	// Resuming while the old stream is still open (its connection dead,
	// say, and not yet noticed) takes the stream over: the old one ends.
	again := resumeStream(t.Context(), a, last)
	for e := range events {
		t.Fatalf("the old stream after it was taken over: %+v", e)
	}
	if e := nextEvent(t, again); e.id != last || e.data != "" {
		t.Fatalf("resumed with nothing missed: %+v, want a priming event with id %s", e, last)
	}
	flood(2)
	expect(again, 2)

	// c, given a's id, gets only what is sent from then on.
	c := newHTTPClient(t, ts.URL)
	cev := resumeStream(t.Context(), c, last)
	if e := nextEvent(t, cev); e.data != "" {
		t.Fatalf("another session's id replayed: %+v", e)
	}
	flood(1)
	if e := nextEvent(t, cev); floodData(t, e) != 0 || strings.HasPrefix(e.id, strings.Split(last, "-")[0]) {
		t.Fatalf("c's first event: %+v (a's ids: %s)", e, last)
	}

	// Sessions that end give back what they kept.
	if face.kept.Load() == 0 {
		t.Fatal("no bytes counted as kept")
	}
	for _, x := range []*httpClient{a, b, c} {
		req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
		req.Header.Set(headerSessionID, x.session)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	await.For(t, 5*time.Second, "the kept bytes to be given back", func() bool { return face.kept.Load() == 0 })
}

// The kept events are bounded by count and by bytes; an id older than
// what is kept gets what is kept; ids of one log name nothing in another.
func TestEventLogBounds(t *testing.T) {
	t.Parallel()
	l := newEventLog()
	first := l.add([]byte("m0"), true)
	for i := 1; i < maxKeptEvents+50; i++ {
		l.add(fmt.Appendf(nil, "m%d", i), true)
	}
	if len(l.kept) != maxKeptEvents {
		t.Fatalf("kept %d events", len(l.kept))
	}
	got, ok := l.after(first)
	if !ok || len(got) != maxKeptEvents || string(got[0].msg) != "m50" {
		t.Fatalf("after an id no longer kept: %d events, ok %v", len(got), ok)
	}
	if got, ok := l.after(l.id(l.seq)); !ok || len(got) != 0 {
		t.Fatalf("after the last id: %d events", len(got))
	}
	big := make([]byte, 300<<10)
	for range 10 {
		l.add(big, true)
	}
	if l.bytes > maxKeptBytes || len(l.kept) != 3 {
		t.Fatalf("kept %d bytes in %d events", l.bytes, len(l.kept))
	}
	l.add(make([]byte, maxKeptBytes+1), true)
	if l.bytes > maxKeptBytes {
		t.Fatalf("kept %d bytes", l.bytes)
	}
	other := newEventLog()
	other.add([]byte("x"), true)
	for _, id := range []string{other.id(0), other.id(1), l.stream + "-x", l.id(l.seq + 1), "", "-1"} {
		if got, ok := l.after(id); ok || len(got) != 0 {
			t.Errorf("after(%q): %d events, ok %v", id, len(got), ok)
		}
	}
	if other.stream == l.stream || len(l.stream) < 24 {
		t.Errorf("streams %q and %q", l.stream, other.stream)
	}

	// All the sessions of a face together keep at most maxKeptTotal: one
	// whose event would go beyond forgets what it kept (no gap), and gives
	// back its bytes when it ends.
	var total atomic.Int64
	a, b := newEventLog(), newEventLog()
	a.total, b.total = &total, &total
	a.add([]byte("aaaa"), true)
	b.add([]byte("bbbbbb"), true)
	if total.Load() != 10 {
		t.Fatalf("total %d, want 10", total.Load())
	}
	total.Add(maxKeptTotal - 12) // as if other sessions kept the rest
	last := b.id(b.seq)
	b.add([]byte("ccc"), true)
	if got, ok := b.after(last); !ok || len(got) != 0 || len(b.kept) != 0 || total.Load() != maxKeptTotal-8 {
		t.Fatalf("over the total: kept %d, %d after the last id; total %d", len(b.kept), len(got), total.Load()-(maxKeptTotal-12))
	}
	total.Add(-(maxKeptTotal - 12))
	a.clear()
	if total.Load() != 0 {
		t.Fatalf("total %d once cleared", total.Load())
	}
}

// Last-Event-ID is the client's: after never panics, and gives events
// only for an id of the log, those after it.
func FuzzEventLogAfter(f *testing.F) {
	l := newEventLog()
	for i := range 300 {
		l.add(fmt.Appendf(nil, "m%d", i), true)
	}
	for _, s := range []string{l.id(100), l.id(0), l.id(299), l.stream + "-", l.stream + "-18446744073709551616", "", "x-1", l.stream + "--1", l.stream + "-+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, ok := l.after(id)
		if !ok && len(got) != 0 {
			t.Fatalf("%q: %d events for an id not known", id, len(got))
		}
		if ok && len(got) > 0 && l.id(got[0].seq-1) != id && got[0].seq != l.kept[0].seq {
			t.Fatalf("%q: replay starts at %d", id, got[0].seq)
		}
	})
}
