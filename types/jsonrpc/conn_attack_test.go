package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// queuedBytes is what waits in c's outbox, in bytes.
func queuedBytes(c *Conn) (n int, msgs int) {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	for _, m := range c.out.queue {
		n += len(m)
	}
	return n, len(c.out.queue)
}

// floodUnread writes data to b again and again for 1.5 s, or until a
// write fails: a peer that sends and never reads.
func floodUnread(b net.Conn, data []byte) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		b.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := b.Write(data); err != nil {
			return
		}
	}
}

// A peer that writes lines that are not JSON and never reads: every line
// is answered with a -32700 error that goes into the outbox as a
// "response" (never dropped), so the outbox grows with the peer's input
// until the write timeout ends the connection (found before a59f379,
// which makes the reader wait for room; kept as a regression test).
func TestAttackInvalidLineFloodNotReadBoundsOutbox(t *testing.T) {
	c, b := newPairNoCleanup(ConnOptions{WriteTimeout: 3 * time.Second})
	defer func() { b.Close(); c.Close() }()
	line := bytes.Repeat([]byte("x\n"), 4096)
	floodUnread(b, line)
	n, msgs := queuedBytes(c)
	t.Logf("outbox holds %d answers, %d bytes, after 1.5 s of a peer that does not read", msgs, n)
	// The outbox bounds notifications at DefaultOutbox and responses to
	// the peer's requests by DefaultMaxInflight: refusals should be bounded
	// likewise (or the connection ended), not grow with the input.
	if limit := DefaultOutbox + DefaultMaxInflight + 16; msgs > limit {
		t.Errorf("outbox holds %d messages (%d bytes) for a peer that does not read; want at most ~%d", msgs, n, limit)
	}
}

// The same with valid requests over the in-flight limit: each is refused
// with "too many requests in flight", queued without bound.
func TestAttackBusyRefusalsNotReadBoundOutbox(t *testing.T) {
	release := make(chan struct{})
	c, b := newPairNoCleanup(ConnOptions{WriteTimeout: 3 * time.Second, MaxInflight: 4,
		Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		}})
	defer func() { close(release); b.Close(); c.Close() }()
	var buf bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	floodUnread(b, buf.Bytes())
	n, msgs := queuedBytes(c)
	t.Logf("outbox holds %d answers, %d bytes", msgs, n)
	if limit := DefaultOutbox + DefaultMaxInflight + 16; msgs > limit {
		t.Errorf("outbox holds %d busy/duplicate refusals (%d bytes) for a peer that does not read; want at most ~%d", msgs, n, limit)
	}
}

// A JSON-RPC error response whose id is null (what a peer sends about a
// message it could not parse) is a Response, and must not be answered.
// The Conn answers it with an "Invalid Request" error of its own, so two
// Conns (or a Conn and any peer that does the same) bounce errors forever
// after one bad line.
func TestAttackNullIDErrorResponseIsNotAnswered(t *testing.T) {
	c, p := newPair(t, ConnOptions{})
	_ = c
	p.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	p.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if got := p.recv(); !strings.Contains(got, `"id":"after"`) {
		t.Errorf("the Conn answered an error response: %s", got)
	}
}

// Two Conns back to back, one bad line: they must not bounce errors.
func TestAttackTwoConnsDoNotBounceErrors(t *testing.T) {
	a, b := net.Pipe()
	var refusedA, refusedB atomic.Int64
	ca := NewConn(NewLineStream(a, a, 0), ConnOptions{Refused: func(error, []byte) { refusedA.Add(1) }})
	cb := NewConn(NewLineStream(b, b, 0), ConnOptions{Refused: func(error, []byte) { refusedB.Add(1) }})
	// cb sends one line that is not JSON, as a broken peer might.
	cb.Start()
	_ = cb.out.Send([]byte("not json"))
	ca.Start()
	// Each side's stream is ordered: once cb has ca's answer to a call
	// sent after the bad line, ca has read the bad line and cb has read
	// ca's refusal; once ca has cb's answer to its own call, ca has read
	// whatever cb sent back. A ping-pong would have gone on past that.
	for _, c := range []*Conn{cb, ca, cb} {
		if _, err := c.Call(t.Context(), "ping", nil); err == nil || !strings.Contains(err.Error(), "Method not found") {
			t.Fatalf("ping: %v", err)
		}
	}
	ra, rb := refusedA.Load(), refusedB.Load()
	ca.Close()
	cb.Close()
	if ra+rb > 2 {
		t.Errorf("one bad line made the two sides refuse %d+%d messages (an endless error ping-pong)", ra, rb)
	}
}

// notifications/cancelled for a request in flight: its handler's ctx ends
// and no answer is sent; for an id not in flight nothing happens; an id
// in flight used again is refused without disturbing the first.
func TestAttackCancelAndDuplicateIDs(t *testing.T) {
	started := make(chan string, 10)
	c, p := newPair(t, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		started <- string(m.ID)
		if m.Method == "hang" {
			<-ctx.Done()
			return json.RawMessage(`{"late":true}`), nil
		}
		return json.RawMessage(`{"ok":` + string(m.ID) + `}`), nil
	}})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"hang"}`)
	<-started
	p.send(`{"jsonrpc":"2.0","id":1,"method":"hang"}`)
	if got := p.recv(); !strings.Contains(got, `"id":1,"error"`) || !strings.Contains(got, "already in use") {
		t.Errorf("duplicate id: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}`) // a string, not the number
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"garbage"}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`)
	if c.Inflight() != 1 {
		t.Errorf("in flight after stray cancels: %d", c.Inflight())
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"x"}}`)
	deadline := time.Now().Add(30 * time.Second)
	for c.Inflight() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c.Inflight() != 0 {
		t.Fatal("the cancelled request is still in flight")
	}
	// The id may be used again once its request has ended; and the
	// cancelled one got no answer: the next line is this ping's.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":1,"result":{"ok":1}}` {
		t.Errorf("after cancel: %s", got)
	}
}

// No write to the peer happens on the reading goroutine: every refusal,
// busy answer and handler answer is written by the writer or a handler.
func TestAttackNoWriteOnReader(t *testing.T) {
	a, b := net.Pipe()
	w := &stackWriter{w: a}
	release := make(chan struct{})
	c := NewConn(NewLineStream(a, w, 0), ConnOptions{MaxInflight: 2, Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		if m.Method == "hang" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, nil
	}})
	c.Start()
	defer func() { b.Close(); c.Close() }()
	barrier := make(chan struct{}) // closed when the last request's answer is read
	go func() {
		sc := bufio.NewScanner(b)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":"last"`) {
				close(barrier)
				break
			}
		}
		io.Copy(io.Discard, b)
	}()
	lines := []string{"x", `[1]`, `{"jsonrpc":"2.0","id":1,"method":"hang"}`, `{"jsonrpc":"2.0","id":2,"method":"hang"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"1.0","id":4,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`}
	for range 50 {
		for _, l := range lines {
			io.WriteString(b, l+"\n")
		}
	}
	close(release)
	// Everything read before it has been dealt with once the last
	// request is answered (or refused as busy).
	io.WriteString(b, `{"jsonrpc":"2.0","id":"last","method":"ping"}`+"\n")
	select {
	case <-barrier:
	case <-time.After(time.Minute):
		t.Fatal("the last request was not answered")
	}
	if n := w.onReader.Load(); n > 0 {
		t.Errorf("%d writes happened on the reading goroutine: %s", n, w.stack.Load())
	}
}

type stackWriter struct {
	w        io.Writer
	onReader atomic.Int64
	stack    atomic.Value
}

func (s *stackWriter) Write(b []byte) (int, error) {
	buf := make([]byte, 8192)
	buf = buf[:runtime.Stack(buf, false)]
	if bytes.Contains(buf, []byte("(*Conn).read(")) {
		s.onReader.Add(1)
		s.stack.Store(string(buf))
	}
	return s.w.Write(b)
}

func (s *stackWriter) SetWriteDeadline(t time.Time) error {
	return s.w.(net.Conn).SetWriteDeadline(t)
}

// Order: a handler's answer written directly never overtakes a
// notification queued before it.
func TestAttackDirectWriteKeepsOrder(t *testing.T) {
	var c *Conn
	c, p := newPair(t, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		sent := 0
		for i := range 5 {
			if c.Notify("n", json.RawMessage(fmt.Sprintf(`{"i":%d,"id":%s}`, i, m.ID))) == nil {
				sent++
			}
		}
		return json.RawMessage(fmt.Sprintf(`{"sent":%d}`, sent)), nil
	}})
	const n = 200
	go func() {
		for i := range n {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x"}`, i))
		}
	}()
	seen, last := map[string]int{}, map[string]int{}
	for answers := 0; answers < n; {
		line := p.recv()
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct {
				I  int
				ID json.RawMessage
			}
			Result struct{ Sent int }
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if m.Method == "n" {
			id := string(m.Params.ID)
			if l, ok := last[id]; ok && m.Params.I <= l {
				t.Fatalf("notification %d of %s arrived after %d", m.Params.I, id, l)
			}
			last[id] = m.Params.I
			seen[id]++
			continue
		}
		answers++
		if seen[string(m.ID)] != m.Result.Sent {
			t.Fatalf("answer to %s overtook its notifications (%d of %d seen): %s", m.ID, seen[string(m.ID)], m.Result.Sent, line)
		}
	}
}

// floodHandler answers every request with nothing after work, and
// closes flooding once it has begun n of them: the peer's flood is under
// way, whatever the machine's pace.
func floodHandler(n int64, work time.Duration) (handle func(context.Context, *Message) (json.RawMessage, error), flooding <-chan struct{}) {
	var begun atomic.Int64
	ch := make(chan struct{})
	return func(context.Context, *Message) (json.RawMessage, error) {
		if begun.Add(1) == n {
			close(ch)
		}
		time.Sleep(work)
		return nil, nil
	}, ch
}

// awaitFlood waits for floodHandler's flooding.
func awaitFlood(t *testing.T, flooding <-chan struct{}) {
	t.Helper()
	select {
	case <-flooding:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the peer's requests did not reach the handler")
	}
}

// Close while the peer floods requests: no race between the reader
// starting handlers and Close waiting for them (run with -race), no
// panic. Before a59f379 this raced on Inflight's WaitGroup and could
// panic "sync: WaitGroup is reused before previous Wait has returned".
func TestAttackCloseDuringRequestFlood(t *testing.T) {
	for range 10 {
		a, b := net.Pipe()
		handle, flooding := floodHandler(100, 0)
		c := NewConn(NewLineStream(a, a, 0), ConnOptions{WriteTimeout: time.Second, Handle: handle})
		c.Start()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			io.Copy(io.Discard, b)
		}()
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(b, `{"jsonrpc":"2.0","id":%d,"method":"x"}`+"\n", i); err != nil {
					return
				}
			}
		}()
		awaitFlood(t, flooding)
		c.Close()
		b.Close()
		wg.Wait()
	}
}

// A Call whose peer never answers and never reads: it fails by its ctx,
// and a Conn over a writer with no deadline ends by the write timeout.
func TestAttackCallPeerNeverReads(t *testing.T) {
	pr, pw := io.Pipe() // no deadline: the timer path
	inR, _ := io.Pipe()
	c := NewConn(NewLineStream(inR, pw, 0), ConnOptions{WriteTimeout: 200 * time.Millisecond})
	c.Start()
	defer c.Close()
	_ = pr
	// The ctx far beyond the write timeout: the call ends by the
	// timeout, well before it, however busy the machine.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := c.Call(ctx, "x", json.RawMessage(`{"big":"`+strings.Repeat("a", 1<<16)+`"}`))
	if err == nil || time.Since(start) > 30*time.Second {
		t.Errorf("Call: %v after %v", err, time.Since(start))
	}
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Error("the connection did not end at the write timeout")
	}
}

// A reply over the size limit whose id comes last fails its call at once.
func TestAttackOversizeReplyIDLast(t *testing.T) {
	c, b := newPairNoCleanup(ConnOptions{MaxMessageSize: 1 << 16, Quiet: true})
	defer func() { b.Close(); c.Close() }()
	br := bufio.NewReader(b)
	go func() {
		line, _ := br.ReadString('\n')
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(line), &m)
		fmt.Fprintf(b, `{"jsonrpc":"2.0","result":{"x":"%s"},"id":%s}`+"\n", strings.Repeat("a", 1<<17), m.ID)
		io.Copy(io.Discard, br)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second*await.Slow)
	defer cancel()
	start := time.Now()
	_, err := c.Call(ctx, "x", nil)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("Call: %v after %v", err, time.Since(start))
	}
}

// After Close, no goroutine of the Conn is left: the reader, the writer
// and every handler's.
func TestAttackNoGoroutinesAfterClose(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 10 {
		c, p := newPairNoCleanup(ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) { return nil, nil }})
		br := bufio.NewReader(p)
		for i := range 20 {
			fmt.Fprintf(p, `{"jsonrpc":"2.0","id":%d,"method":"x"}`+"\n", i)
			br.ReadString('\n')
		}
		c.Close()
		p.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d 2 s after Close\n%.3000s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func newPairNoCleanup(opts ConnOptions) (*Conn, net.Conn) {
	a, b := net.Pipe()
	c := NewConn(NewLineStream(a, a, opts.MaxMessageSize), opts)
	c.Start()
	return c, b
}

// Answers to the peer's own requests are bounded by the in-flight limit
// until they are written. At a639e0f a request left the in-flight set when
// its handler returned, before its answer was written, so a peer that sent
// requests and never read got any number of 64 KiB answers queued (192 MiB
// in 1.5 s); fixed in 73f8692, kept as a regression test.
func TestAttackAnswersToNonReaderBoundedByInflight(t *testing.T) {
	big := json.RawMessage(`{"text":"` + strings.Repeat("r", 64<<10) + `"}`)
	c, b := newPairNoCleanup(ConnOptions{WriteTimeout: 3 * time.Second, MaxInflight: 8,
		Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) { return big, nil }})
	defer func() { b.Close(); c.Close() }()
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		b.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := fmt.Fprintf(b, `{"jsonrpc":"2.0","id":%d,"method":"x"}`+"\n", i); err != nil {
			break
		}
		if i%64 == 0 {
			time.Sleep(time.Millisecond) // let handlers run
		}
	}
	n, msgs := queuedBytes(c)
	t.Logf("outbox holds %d answers, %d bytes, with MaxInflight 8", msgs, n)
	if msgs > 4*8 { // bounded by the in-flight limit (queued, in flight, a batch being written), not by time
		t.Errorf("outbox holds %d answers (%d MiB) for a peer that never reads, with MaxInflight 8", msgs, n>>20)
	}
}

// Close while the peer keeps sending requests returns promptly: the
// reader must not keep Close's wait for requests in flight from ending.
func TestAttackCloseReturnsWhilePeerFloods(t *testing.T) {
	a, b := net.Pipe()
	handle, flooding := floodHandler(50, time.Millisecond) // a moment of work that does not look at ctx
	c := NewConn(NewLineStream(a, a, 0), ConnOptions{Handle: handle})
	c.Start()
	stop := make(chan struct{})
	go io.Copy(io.Discard, b)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := fmt.Fprintf(b, `{"jsonrpc":"2.0","id":%d,"method":"x"}`+"\n", i); err != nil {
				return
			}
		}
	}()
	awaitFlood(t, flooding)
	closed := make(chan struct{})
	start := time.Now()
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // it never returned when it waited for the reader
		t.Errorf("Close has not returned %v after it was called, while the peer keeps sending", time.Since(start))
	}
	close(stop)
	b.Close()
	<-closed
}

// Close with a message queued and not yet taken by the writer: the
// writer's one wake-up token already stands for that message, so the one
// out.Close sends is lost; the writer writes the message and then waits
// for a token that never comes, and Close waits out the whole write
// timeout (10 s by default) although the peer reads everything.
func TestAttackCloseWithQueuedMessageIsPrompt(t *testing.T) {
	// The bubble's clock: a prompt Close takes none of it, the bug the
	// whole write timeout, however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		for range 20 {
			a, b := net.Pipe()
			go io.Copy(io.Discard, b)
			c := NewConn(NewLineStream(a, a, 0), ConnOptions{WriteTimeout: 2 * time.Second})
			_ = c.Notify("n", nil) // queued before the writer runs
			start := time.Now()
			c.Close()
			took := time.Since(start)
			b.Close()
			if took >= 2*time.Second {
				t.Fatalf("Close waited the whole write timeout (%s) with a peer that reads", took)
			}
		}
	})
}
