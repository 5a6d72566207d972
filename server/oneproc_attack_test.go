//go:build linux

package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/stalltest"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// blockingPipe is a pipe whose ends are blocking, as a client's pipes to
// the standalone hub are (os.Pipe's are non-blocking, polled).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// The standalone hub on one processor, as it runs once started (cmd's
// localProcs), reading its stdin through the poller (local.Polled) and
// writing a blocking stdout: its client sends calls and stops reading.
// The hub's write to it waits in a system call; the hub stops reading
// its calls rather than holding them (its memory stays bounded), goes on
// with the rest (its sessions' table answers), and once the client reads
// again it is answered every call. It takes the process's processors
// and measures its heap: it runs in a process of its own.
func TestAttackStandaloneOneProcessorStalledReader(t *testing.T) {
	if !inProcessOfItsOwn(t) {
		return
	}
	// call_timeout as long as a hang: the calls the hub holds wait while
	// the client does not read, and beside the package's other tests on
	// a busy machine that outlasted fakeHub's 5 s.
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	in := local.Polled(inR)
	if in == inR {
		t.Fatal("stdin is not polled")
	}
	t.Cleanup(func() { in.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- h.ServeStdioWith(ctx, in, outW, StdioOptions{WriteTimeout: time.Hour}) }()
	out := bufio.NewReaderSize(outR, 1<<20)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	before := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(before)

	calls := stalltest.Calls
	text := strings.Repeat("s", stalltest.CallSize)
	quoted := strconv.Quote(text) // once: quoting it per call took a tenth of the test's CPU under -race
	heap := stalltest.Mark()
	written := make(chan error, 1)
	go func() {
		for i := range calls {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":%s}}}`+"\n", i, quoted); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	// The client's stdout fills: the hub's next write to it waits.
	stalltest.WaitForPipe(t, outR, 48<<10)
	if s := h.Sessions().Info(); len(s) != 1 {
		t.Errorf("sessions: %+v", s)
	}
	heap.HeldBack(t, written, inW)
	// It reads again: every call is answered, once.
	seen := map[string]bool{}
	for len(seen) < calls {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", len(seen), err)
		}
		id := string(jsonrpc.Field([]byte(line), "id"))
		if seen[id] || !strings.Contains(line, text) {
			t.Fatalf("after %d answers: %.300s", len(seen), line)
		}
		seen[id] = true
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	cancel()
}
