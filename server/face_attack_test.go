package server

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A stdio client that sends requests and never reads its answers: serving
// ends at the write timeout, cleanly, and every goroutine of the session
// ends. Serial: it counts the process's goroutines, which parallel tests
// start and end meanwhile (at four tests a core, one's hub made this
// fail).
func TestAttackStdioRequestsNeverRead(t *testing.T) {
	h := fakeHub(t)
	before := liveGoroutines()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- h.ServeStdioWith(context.Background(), inR, outW, StdioOptions{WriteTimeout: 200 * time.Millisecond})
	}()
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"%s"}}}`+"\n", i, strings.Repeat("a", 1000)); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("serving goes on with a client that never reads")
	}
	inW.Close()
	outR.Close()
	waitGoroutines(t, before)
}

// waitGoroutines waits for the goroutine count to come back to before
// (allowing a few of the runtime's and the pipes' own). Idle handler
// workers of jsonrpc.Conn, which end by themselves after 10 s, are not
// counted (see jsonrpc's TestAttackNoGoroutinesAfterClose).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	n := liveGoroutines()
	for n > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = liveGoroutines()
	}
	if n > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// liveGoroutines counts goroutines but jsonrpc's idle workers.
func liveGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "jsonrpc.(*Workers).run") && strings.Contains(g, "[select") {
			continue
		}
		n++
	}
	return n
}

// The hub stops (ctx ends, as on SIGTERM) while a stdio client is still
// sending requests: serving ends promptly, without starting the client's
// new requests through a 5 s drain. (At a639e0f ServeStdio kept starting
// them for the whole drainTimeout; the uncommitted Inflight.Stop change
// fixes it. Kept as a regression test.)
func TestAttackStdioStopDuringRequestFlood(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inR.Close()
	defer outR.Close()
	done := make(chan error, 1)
	go func() { done <- h.ServeStdioWith(ctx, inR, outW, StdioOptions{}) }()
	go io.Copy(io.Discard, outR)
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":20}}}`+"\n", i); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	await.For(t, 5*time.Second, "the flood's requests in flight", func() bool {
		s := h.Sessions().Info()
		return len(s) == 1 && s[0].Inflight > 0
	})
	cancel()
	start := time.Now()
	select {
	case <-done:
	case <-time.After(time.Minute): // the flood never ends: serving it out would be for ever
		t.Fatalf("ServeStdio still serving %v after ctx ended (each request takes 20 ms)", time.Since(start))
	}
}
