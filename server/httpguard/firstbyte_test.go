package httpguard

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// serveHeaderTimeout serves "ok" with a short ReadHeaderTimeout, on ln
// wrapped by FirstByteListener.
func serveHeaderTimeout(t *testing.T, headerTimeout, idle time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: headerTimeout, IdleTimeout: idle}
	go func() { _ = srv.Serve(FirstByteListener(ln, idle)) }()
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
	c, err := FirstByteListener(ln, 0).Accept()
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
