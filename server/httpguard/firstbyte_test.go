package httpguard

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveHeaderTimeout serves "ok" with a short ReadHeaderTimeout, on ln
// wrapped by FirstByteListener.
func serveHeaderTimeout(t *testing.T, headerTimeout, idle time.Duration) string {
	return serveLogged(t, headerTimeout, idle, nil)
}

// serveLogged is serveHeaderTimeout logging to logger, its lines of
// closed connections at most every closedLogEvery.
func serveLogged(t *testing.T, headerTimeout, idle time.Duration, logger *slog.Logger) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: headerTimeout, IdleTimeout: idle}
	go func() { _ = srv.Serve(FirstByteListener(ln, idle, logger)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func TestFirstByteListener(t *testing.T) {
	t.Parallel()
	const headerTimeout = 100 * time.Millisecond
	addr := serveHeaderTimeout(t, headerTimeout, time.Minute)
	request := "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"

	// A client slow to write its first request after its connect (a
	// starved process) is answered: the header timeout has not begun.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(3 * headerTimeout) // past the header timeout, were it counted from accept
	if _, err := c.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a request written %v after the connect: %v", 3*headerTimeout, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// A client that trickles its headers is still cut off, the header
	// timeout after its first byte.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte("P")); err != nil {
		t.Fatal(err)
	}
	_ = slow.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(slow); err != nil { // a 400 or nothing, then the close
		t.Fatalf("a trickling client was not cut off by the header timeout: %v", err)
	}
}

// TestFirstByteListenerIdle: a connection that sends nothing is closed
// after the wait before its first byte.
func TestFirstByteListenerIdle(t *testing.T) {
	t.Parallel()
	addr := serveHeaderTimeout(t, time.Minute, 100*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a silent connection read bytes")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a silent connection was not closed after idle")
	}
}

// The wrapped connection of a TCP listener can still shut its writing
// side (net/http's closeWriteAndWait, before the close that follows a
// 413), and a wait of 0 is bounded all the same.
func TestFirstByteConnCloseWrite(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := FirstByteListener(ln, 0, nil).Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if wait := c.(*firstByteConn).wait; wait != FirstByteWait {
		t.Errorf("a wait of 0 is %v, want %v", wait, FirstByteWait)
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the wrapped TCP connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after CloseWrite the client read %d bytes, %v; want EOF", n, err)
	}
}

// logLines is a logger's output, written by the server's goroutines.
type logLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// closedByServer waits until the server closes c (a bound of a minute
// for a hang): the line of its close, if any, is written before.
func closedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

// A connection closed for its silence is logged with the client's
// address: at info when its first request's headers did not come within
// the header timeout, at debug when it sent nothing; a flood of them is
// one line, and the next line, once closedLogEvery has passed, counts
// those not logged.
func TestFirstByteListenerLogsTheClose(t *testing.T) {
	t.Parallel()
	var out logLines
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const headerTimeout = 100 * time.Millisecond
	addr := serveLogged(t, headerTimeout, 100*time.Millisecond, logger)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	trickle := dial()
	if _, err := trickle.Write([]byte("POST /mcp HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, trickle)
	got := out.lines()
	if len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "headers did not all come within the header timeout") ||
		!strings.Contains(got[0], "remote="+trickle.LocalAddr().String()) || !strings.Contains(got[0], "within=100ms") {
		t.Fatalf("the close of a trickling client logged:\n%s", strings.Join(got, "\n"))
	}

	// Ten more, silent: within closedLogEvery of that line, none logged.
	for range 10 {
		closedByServer(t, dial())
	}
	if got := out.lines(); len(got) != 1 {
		t.Fatalf("a flood of closes logged %d lines:\n%s", len(got), strings.Join(got, "\n"))
	}
	// A request answered is not a close for silence.
	ok := dial()
	if _, err := ok.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, ok)
	if got := out.lines(); len(got) != 1 {
		t.Fatalf("an answered request logged:\n%s", strings.Join(got, "\n"))
	}
}

// The line after a quiet spell counts the closes not logged, and a silent
// connection is logged at debug.
func TestClosedLogCounts(t *testing.T) {
	var out logLines
	l := &closedLog{logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})), every: time.Hour}
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}
	for range 5 {
		l.closed(slog.LevelDebug, "closed an HTTP connection that sent nothing", addr, FirstByteWait)
	}
	l.mu.Lock()
	l.last = l.last.Add(-time.Hour)
	l.mu.Unlock()
	l.closed(slog.LevelDebug, "closed an HTTP connection that sent nothing", addr, FirstByteWait)
	got := out.lines()
	if len(got) != 2 || !strings.Contains(got[0], "level=DEBUG") || !strings.Contains(got[0], "remote=192.0.2.1:4242 within=30s") ||
		strings.Contains(got[0], "closed_likewise") || !strings.HasSuffix(got[1], "closed_likewise_since_last_line=4") {
		t.Errorf("lines:\n%s", strings.Join(got, "\n"))
	}
	// Not enabled at the level: nothing counted, nothing written.
	quiet := &closedLog{logger: slog.New(slog.NewTextHandler(&out, nil)), every: time.Hour}
	quiet.closed(slog.LevelDebug, "closed an HTTP connection that sent nothing", addr, FirstByteWait)
	if quiet.others != 0 || len(out.lines()) != 2 {
		t.Errorf("a line below the logger's level was counted or written")
	}
}

// A kept-alive connection closed idle after its request is not logged;
// one whose later request's headers did not all come within the header
// timeout is, at info.
func TestFirstByteListenerLogsALaterRequestsClose(t *testing.T) {
	t.Parallel()
	var out logLines
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The idle timeout is long enough for the test to write its later
	// request after the answer on a loaded machine.
	addr := serveLogged(t, 100*time.Millisecond, time.Second, logger)
	answered := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return c
	}

	closedByServer(t, answered()) // idle
	if got := out.lines(); len(got) != 1 || got[0] != "" {
		t.Fatalf("a kept-alive connection closed idle logged:\n%s", strings.Join(got, "\n"))
	}
	trickle := answered()
	if _, err := trickle.Write([]byte("POST /mcp HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, trickle)
	got := out.lines()
	if len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "a later request's headers did not all come within the header timeout") ||
		!strings.Contains(got[0], "remote="+trickle.LocalAddr().String()) || !strings.Contains(got[0], "within=100ms") {
		t.Fatalf("the close of a kept-alive connection's trickling request logged:\n%s", strings.Join(got, "\n"))
	}
}
