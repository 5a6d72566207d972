package httpguard

import (
	"net"
	"sync/atomic"
	"time"
)

// FirstByteWait is how long a new connection may stay silent before its
// first byte (FirstByteListener): a client starved between its connect
// and its first write needs seconds, not minutes, and a silent connection
// holds a goroutine and a descriptor of the hub's.
const FirstByteWait = 30 * time.Second

// FirstByteListener hands out ln's connections with the header timeout of
// their first request (http.Server.ReadHeaderTimeout) counted from its
// first byte, as net/http counts it for every later request of a
// kept-alive connection; until that byte a connection may stay silent for
// wait (0: FirstByteWait), and is then closed.
//
// net/http starts the first request's header timeout at accept. A client
// whose process is starved between its connect and its first write (a
// Node client on a loaded machine: undici writes the request only once
// its event loop runs the connect callback) found the connection closed
// without an answer: undici's "fetch failed", cause "other side closed",
// and undici does not retry a POST. A client that trickles its headers is
// still cut off ReadHeaderTimeout after its first byte.
func FirstByteListener(ln net.Listener, wait time.Duration) net.Listener {
	if wait <= 0 {
		wait = FirstByteWait // never unbounded: a silent connection would be held for ever
	}
	return firstByteListener{ln, wait}
}

type firstByteListener struct {
	net.Listener
	wait time.Duration
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c, wait: l.wait}, nil
}

// firstByteConn holds back the read deadlines set before its first byte
// has arrived, and applies the last of them shifted by the wait. Until
// then only the connection's own goroutine (net/http's conn.serve) reads
// it and sets its deadlines.
type firstByteConn struct {
	net.Conn
	wait    time.Duration // before the first byte
	started atomic.Bool
	held    time.Time // the deadline held back (zero: none)
	heldAt  time.Time // when it was set
}

func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	if c.started.Load() {
		return c.Conn.SetReadDeadline(t)
	}
	c.held, c.heldAt = t, time.Now()
	return nil
}

func (c *firstByteConn) Read(b []byte) (int, error) {
	if c.started.Load() {
		return c.Conn.Read(b)
	}
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.wait)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	c.started.Store(true)
	deadline := c.held
	if !deadline.IsZero() {
		deadline = deadline.Add(time.Since(c.heldAt))
	}
	if derr := c.Conn.SetReadDeadline(deadline); err == nil {
		err = derr
	}
	return n, err
}

// CloseWrite shuts the writing side of the connection, when the inner one
// can (a TCP or Unix connection): net/http does before it closes a
// connection whose request it did not read in full (a 413, say), so that
// the client reads the answer rather than a reset.
func (c *firstByteConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
