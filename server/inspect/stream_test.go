package inspect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// sseEvent is one server-sent event as read.
type sseEvent struct {
	name string
	data json.RawMessage
}

// openEvents opens the event stream of the inspector served at base.
func openEvents(t *testing.T, base string) (<-chan sseEvent, func()) {
	t.Helper()
	resp, err := http.Get(base + Prefix + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 1024)
	go func() {
		defer close(ch)
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = json.RawMessage(line[6:])
			case line == "" && ev.name != "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch, func() { resp.Body.Close() }
}

func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no event")
	}
	return sseEvent{}
}

// The stream sends the history, then each change live, in order.
func TestStreamHistoryThenLive(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	call(i, 1, []byte(`{"name":"echo"}`))
	call(i, 2, []byte(`{"name":"echo"}`))
	ch, stop := openEvents(t, srv.URL)
	defer stop()
	var names []string
	for ev := nextEvent(t, ch); ; ev = nextEvent(t, ch) {
		names = append(names, ev.name)
		if ev.name == "live" {
			break
		}
	}
	if got := strings.Join(names, " "); got != "hello row row live" {
		t.Fatalf("history: %s", got)
	}
	call(i, 3, []byte(`{"password":"p"}`))
	var got []string
	for range 3 {
		ev := nextEvent(t, ch)
		got = append(got, ev.name)
		if strings.Contains(string(ev.data), `\"p\"`) {
			t.Errorf("a secret went out: %s", ev.data)
		}
	}
	if strings.Join(got, " ") != "row hop end" {
		t.Errorf("live: %v", got)
	}
	resp, err := http.Post(srv.URL+Prefix+"api/clear", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("clear: %v %v", resp, err)
	}
	if ev := nextEvent(t, ch); ev.name != "clear" {
		t.Errorf("after clear: %s", ev.name)
	}
	if len(i.rows()) != 0 {
		t.Error("the history was not cleared")
	}
	// Close ends the stream.
	i.Close()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Error("the stream did not end at Close")
	}
}

// A page that stops reading never holds up the hub: what does not fit its
// buffer is dropped, counted, and the page told when it reads again.
func TestStalledPageNeverBlocksTheHub(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	// The page stalls while the calls are recorded, which on a busy
	// machine takes longer than the 10 s a write may: it must not lose
	// its stream before it reads again (65 s were seen at a load of 30).
	i.writeTimeout = 10 * time.Minute
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %sapi/events HTTP/1.1\r\nHost: x\r\n\r\n", Prefix)
	waitSubscribed(t, i, 1)

	// Far more than the page's buffer and the sockets' buffers hold.
	params := []byte(`{"text":"` + strings.Repeat("x", 8<<10) + `"}`)
	done := make(chan time.Duration, 1)
	var recorded atomic.Int64
	go func() {
		start := time.Now()
		for n := range 3 * subscriberBuffer {
			call(i, n, params)
			recorded.Add(1)
		}
		done <- time.Since(start)
	}()
	// A call the page held up would never return: the calls fail when
	// none returns for 10 s, not when all of them take longer than some
	// time (they take 3 s alone, and above 30 s on a busy machine).
	for last := int64(-1); ; {
		select {
		case took := <-done:
			t.Logf("%d calls recorded in %s with a stalled page", 3*subscriberBuffer, took)
		case <-time.After(10 * time.Second * await.Slow):
			if n := recorded.Load(); n != last {
				last = n
				continue
			}
			t.Fatalf("the calls were held up by a page that does not read: %d of %d returned", last, 3*subscriberBuffer)
		}
		break
	}
	// Reading again, the page learns how many events it lost.
	r := bufio.NewReaderSize(conn, 1<<20)
	for {
		conn.SetReadDeadline(time.Now().Add(20 * time.Second * await.Slow)) // per line: a busy machine writes slowly
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no lost event: %v", err)
		}
		if line == "event: lost\n" {
			line, _ = r.ReadString('\n')
			var lost struct{ Lost int }
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &lost) != nil || lost.Lost <= 0 {
				t.Fatalf("lost event %q", line)
			}
			break
		}
	}
}

// The number of pages watching is bounded; one over is refused at once.
func TestTooManyPages(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	var stops []func()
	for range maxSubscribers {
		_, stop := openEvents(t, srv.URL)
		stops = append(stops, stop)
	}
	resp, err := http.Get(srv.URL + Prefix + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("page %d: %s", maxSubscribers+1, resp.Status)
	}
	for _, stop := range stops {
		stop()
	}
	waitSubscribed(t, i, 0)
}

// The export is the history as JSON Lines, one row a line.
func TestExport(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	for n := range 3 {
		call(i, n, []byte(`{"name":"echo","arguments":{"text":"line\nbreak"}}`))
	}
	resp, err := http.Get(srv.URL + Prefix + "api/export")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(resp.Header.Get("Content-Disposition"), ".jsonl") {
		t.Fatalf("export: %d lines, %v", len(lines), resp.Header)
	}
	for _, l := range lines {
		var r struct {
			Method string
			Hops   []json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Method != "tools/call" || len(r.Hops) != 1 {
			t.Errorf("line %s: %v", l, err)
		}
	}
}

func waitSubscribed(t *testing.T, i *Inspector, n int) {
	t.Helper()
	await.For(t, 10*time.Second, fmt.Sprintf("%d pages watching", n), func() bool {
		i.mu.Lock()
		defer i.mu.Unlock()
		return len(i.subs) == n
	})
}

// A page that reads slowly holds up no more than maxQueued bytes of
// events, however big the messages: what it has not read is not a second,
// unbounded history (events keep rows alive that the history dropped).
func TestSlowPageHoldsBoundedBytes(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	s, _, err := i.subscribe() // a page that never reads
	if err != nil {
		t.Fatal(err)
	}
	defer i.unsubscribe(s)
	big := []byte(`{"text":"` + strings.Repeat("x", 60<<10) + `"}`)
	for n := range 400 { // each call: a row, a hop and an end, each with bodies of 60 KiB
		call(i, n, big)
	}
	var held int64
	for len(s.ch) > 0 {
		held += s.take(<-s.ch).size()
	}
	if held > maxQueued || s.lost.Load() == 0 {
		t.Errorf("a page that does not read holds %d bytes of events (cap %d), lost %d", held, maxQueued, s.lost.Load())
	}
	if q := s.queued.Load(); q != 0 {
		t.Errorf("%d bytes still counted as queued once all was read", q)
	}
	// Once it has read, it gets events again.
	call(i, 1000, []byte(`{}`))
	if len(s.ch) == 0 {
		t.Error("no events after the page caught up")
	}
}
