package mcphttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A replica told to stop drains: at once it is not ready and refuses new
// sessions 503, its GET streams close (the client opens them again,
// elsewhere), and a call in flight finishes and is answered; Drain returns
// once it has, or when its time is up.
func TestDrain(t *testing.T) {
	t.Parallel()
	face, _, url := replica(t, sealKey1)
	id := initializeOn(t, url, tokenA)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, id)
	stream, err := testClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	streamEnded := make(chan struct{})
	go func() { io.Copy(io.Discard, stream.Body); close(streamEnded) }()

	type answer struct {
		code int
		body string
	}
	// The call lasts until its gate opens, once Drain is seen waiting for it.
	gate := filepath.Join(t.TempDir(), "gate")
	slow := make(chan answer, 1)
	go func() {
		code, _, body := call(t, http.MethodPost, url, tokenA, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q}}}`, gate))
		slow <- answer{code, body}
	}()
	await.For(t, 5*time.Second, "the call in flight", func() bool { return face.inflight.load() == 1 })

	if face.Ready() != nil {
		t.Fatal("not ready before Drain")
	}
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), await.Slow*10*time.Second)
		defer cancel()
		drained <- face.Drain(ctx)
	}()
	await.For(t, time.Second, "Ready to fail", func() bool { return errors.Is(face.Ready(), ErrDraining) })
	if code, _, body := call(t, http.MethodPost, url, tokenA, "", initializeMsg); code != http.StatusServiceUnavailable {
		t.Errorf("a new session while draining: %d %s", code, body)
	}
	select {
	case <-streamEnded:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the GET stream stayed open")
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) with a call in flight", err)
	default:
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := <-slow; a.code != http.StatusOK || !strings.Contains(a.body, "slept 0") {
		t.Errorf("the call in flight: %d %s", a.code, a.body)
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain: %v", err)
	}
}

// Drain gives up when its time is up, with the calls still in flight:
// Close ends them.
func TestDrainTimeout(t *testing.T) {
	t.Parallel()
	face, _, url := replica(t)
	id := initializeOn(t, url, tokenA)
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(t, http.MethodPost, url, tokenA, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":120000}}}`)
	}()
	await.For(t, 5*time.Second, "the call in flight", func() bool { return face.inflight.load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The call lasts far longer than the bound: a Drain that waited for it
	// is told from one that gave up, however busy the machine.
	if err := face.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Minute {
		t.Errorf("Drain: %v after %v", err, time.Since(start))
	}
	face.Close()
	<-done
}

// A listen (2026-07-28) is a request in flight for as long as it is open:
// a replica that drains closes it, as it does a GET stream (the client
// listens again elsewhere), and so does not wait its drain timeout for it.
func TestDrainClosesListens(t *testing.T) {
	t.Parallel()
	face, ts := serveHTTP(t, fakeHub(t))
	c := &httpClient{t: t, base: ts.URL}
	ls := openListen(t.Context(), c, `"L"`, `"toolsListChanged":true`)
	if m := ls.next(); m == nil {
		t.Fatal("no acknowledgement")
	}
	await.For(t, 5*time.Second, "the listen in flight", func() bool { return face.inflight.load() == 1 })
	// A drain timeout far beyond the bound: a Drain that waited it out
	// is told from one that closed the listen, however busy the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := face.Drain(ctx); err != nil || time.Since(start) > time.Minute {
		t.Errorf("Drain with a listen open: %v after %v", err, time.Since(start))
	}
	deadline := time.After(time.Minute) // bounds a hang, not a timing
	for {
		select {
		case _, open := <-ls.events:
			if open {
				continue
			}
		case <-deadline:
			t.Fatal("the listen's stream stayed open")
		}
		return
	}
}
