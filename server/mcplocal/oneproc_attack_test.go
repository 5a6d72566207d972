//go:build linux

package mcplocal

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/stalltest"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A desktop's hub runs its Go code on one processor once its upstreams
// have started (cmd/dynamic-mcp's localProcs), and reads and writes its
// clients' passed pipes through open files of its own (OwnPassed), its
// clients' passed sockets as passed. These attacks run the shared hub
// both ways, in process: one client floods it, or stops reading,
// and another client's calls must still be answered, the first client's
// too once it reads again, with the hub's memory bounded meanwhile.

// eachPassedRead runs test on a hub that reads and writes its clients'
// passed pipes through open files of its own (OwnPassed), and on one that
// reads them as passed (local.WaitingReader), as it does a socket (a Node
// client's stdio) or without OwnPassed.
func eachPassedRead(t *testing.T, test func(*testing.T, *harness)) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("OwnPassed=%v", own), func(t *testing.T) {
			test(t, startLogged(t, Options{WriteTimeout: time.Hour, OwnPassed: own}, "", "", slog.New(slog.DiscardHandler)))
		})
	}
}

// oneProcessor runs the rest of the test on one processor, as the hub
// does once started.
func oneProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
}

// passedClient is a client of the shared hub whose bridge passed its
// stdin and stdout (Pass): the client writes in and reads outR.
type passedClient struct {
	in   *os.File
	outR *os.File
	out  *bufio.Reader
}

// passed connects a client named name and initializes its session.
func (h *harness) passed(t *testing.T, name string) *passedClient {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession, Pass: true})
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	if err := local.SendFiles(c, inR, outW); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	p := &passedClient{in: inW, outR: outR, out: bufio.NewReaderSize(outR, 1<<20)}
	t.Cleanup(func() { inW.Close(); outR.Close() })
	p.write(t, initialize(name))
	if line := p.line(t); !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q", line)
	}
	p.write(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return p
}

func (p *passedClient) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		t.Fatal(err)
	}
}

// line is the next line the hub wrote the client.
func (p *passedClient) line(t *testing.T) string {
	t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the hub's answer: %v", err)
	}
	return line
}

// echo calls f__echo with text and checks its answer.
func (p *passedClient) echo(t *testing.T, id int, text string) {
	t.Helper()
	p.write(t, echoCall(id, text))
	line := p.line(t)
	if got := string(jsonrpc.Field([]byte(line), "id")); got != fmt.Sprint(id) || !strings.Contains(line, text) {
		t.Fatalf("echo %d: %.300s", id, line)
	}
}

func echoCall(id int, text string) string { return quotedEchoCall(id, strconv.Quote(text)) }

// quotedEchoCall is echoCall of a text quoted once by its caller: quoting
// 16 KiB per call took a twentieth of a test's CPU under -race.
func quotedEchoCall(id int, quoted string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":%s}}}`+"\n", id, quoted)
}

// answers reads the client's output until it has an answer for each id
// in [first, first+n), and fails on an answer twice or to another id.
func (p *passedClient) answers(t *testing.T, first, n int) {
	t.Helper()
	seen := make(map[int]bool, n)
	for len(seen) < n {
		line := p.line(t)
		var id int
		if _, err := fmt.Sscan(string(jsonrpc.Field([]byte(line), "id")), &id); err != nil || id < first || id >= first+n || seen[id] {
			t.Fatalf("after %d of %d answers: %.300s", len(seen), n, line)
		}
		seen[id] = true
	}
}

// stopWhenDone bounds a hang: a frozen hub fails the test (and lets the
// goroutines blocked on it go) rather than hanging it; not a timing.
func stopWhenDone(t *testing.T, clients ...*passedClient) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			t.Error("the hub froze: no progress in 5 minutes")
			for _, c := range clients {
				c.in.Close()
				c.outR.Close()
			}
		}
	})
	t.Cleanup(func() { close(done); wg.Wait() })
}

// A client that floods the hub with calls as fast as it can write them
// (reading its answers as they come) leaves the hub on one processor
// answering another client's calls, and a client's that joins meanwhile,
// and gets an answer to each of its own (a result, or "too many in
// flight").
func TestAttackOneProcessorFlood(t *testing.T) { eachPassedRead(t, testAttackOneProcessorFlood) }

// testAttackOneProcessorFlood is TestAttackOneProcessorFlood on h.
func testAttackOneProcessorFlood(t *testing.T, h *harness) {
	flood, other := h.passed(t, "flood"), h.passed(t, "other")
	other.echo(t, 1, "warm") // the upstream is up
	oneProcessor(t)
	stopWhenDone(t, flood, other)

	const first = 1000
	stop, sent := make(chan struct{}), make(chan int, 1)
	go func() {
		id := first
		for {
			select {
			case <-stop:
				sent <- id - first
				return
			default:
			}
			if _, err := io.WriteString(flood.in, echoCall(id, "flood")); err != nil {
				sent <- id - first
				return
			}
			id++
		}
	}()
	// The flooder reads what it is answered as it floods: each of its
	// calls once, in any order (they run at once).
	var mu sync.Mutex
	seen := map[int]bool{}
	progress, readerDone := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			line, err := flood.out.ReadString('\n')
			if err != nil {
				return
			}
			var id int
			_, err = fmt.Sscan(string(jsonrpc.Field([]byte(line), "id")), &id)
			mu.Lock()
			if err != nil || id < first || seen[id] {
				t.Errorf("the flooding client got %.300s", line)
			}
			seen[id] = true
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()
	answers := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	<-progress // the flood is under way
	// Five calls, one after another, each behind the flood's calls in
	// flight: the flood lasts until they are answered, and each took
	// about half a second of it under -race (twenty took 7 s of CPU).
	const others = 5
	for i := range others {
		other.echo(t, 2+i, fmt.Sprintf("other-%d", i))
	}
	// A client that joins meanwhile (its bridge's hello is read within
	// helloTimeout) is served too.
	h.passed(t, "late").echo(t, 2, "late")
	close(stop)
	n := <-sent
	for answers() < n {
		select {
		case <-progress:
		case <-readerDone:
			t.Fatalf("the flooding client's session ended after %d of its %d calls were answered", answers(), n)
		}
	}
	flood.in.Close() // the reader ends with the session
	<-readerDone
	if got := answers(); got != n {
		t.Errorf("the flooding client sent %d calls and got %d answers", n, got)
	}
	t.Logf("%d calls flooded while the other client made %d", n, others)
}

// A client that sends calls and stops reading (its stdout's pipe full,
// the hub's write to it blocked) leaves the hub on one processor
// answering another client's calls; the hub stops reading the stalled
// client's calls rather than holding them (its memory stays bounded);
// and once the client reads again it is answered every call.
func TestAttackOneProcessorStalledReader(t *testing.T) {
	eachPassedRead(t, testAttackOneProcessorStalledReader)
}

// testAttackOneProcessorStalledReader is TestAttackOneProcessorStalledReader on h.
func testAttackOneProcessorStalledReader(t *testing.T, h *harness) {
	stalled, other := h.passed(t, "stalled"), h.passed(t, "other")
	other.echo(t, 1, "warm")
	oneProcessor(t)
	stopWhenDone(t, stalled, other)

	text := strings.Repeat("s", stalltest.CallSize)
	quoted := strconv.Quote(text)
	heap := stalltest.Mark()
	written := make(chan error, 1)
	go func() {
		for i := range stalltest.Calls {
			if _, err := io.WriteString(stalled.in, quotedEchoCall(i, quoted)); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	// The stalled client's stdout fills: the hub's next write to it waits.
	stalltest.WaitForPipe(t, stalled.outR, 48<<10)
	for i := range 20 {
		other.echo(t, 2+i, fmt.Sprintf("other-%d", i))
	}
	h.passed(t, "late").echo(t, 2, "late") // a client that joins meanwhile
	heap.HeldBack(t, written, stalled.in)
	// It reads again: every call is answered.
	stalled.answers(t, 0, stalltest.Calls)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
