package httpguard

import (
	"net"
	"sync/atomic"
	"time"
)

// FirstByteListener hands out ln's connections with the header timeout of
// their first request (http.Server.ReadHeaderTimeout) counted from its
// first byte, as net/http counts it for every later request of a
// kept-alive connection; until that byte a connection may idle for idle
// (http.Server.IdleTimeout), as a kept-alive one may.
//
// net/http starts the first request's header timeout at accept. A client
// whose process is starved between its connect and its first write (a
// Node client on a loaded machine: undici writes the request only once
// its event loop runs the connect callback) found the connection closed
// without an answer: undici's "fetch failed", cause "other side closed",
// and undici does not retry a POST. A silent connection is held no longer
// than one a client keeps alive after a request, and a client that
// trickles its headers is still cut off ReadHeaderTimeout after its first
// byte.
func FirstByteListener(ln net.Listener, idle time.Duration) net.Listener {
	return firstByteListener{ln, idle}
}

type firstByteListener struct {
	net.Listener
	idle time.Duration
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c, idle: l.idle}, nil
}

// firstByteConn holds back the read deadlines set before its first byte
// has arrived, and applies the last of them shifted by the wait. Until
// then only the connection's own goroutine (net/http's conn.serve) reads
// it and sets its deadlines.
type firstByteConn struct {
	net.Conn
	idle    time.Duration
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
	var wait time.Time
	if c.idle > 0 {
		wait = time.Now().Add(c.idle)
	}
	if err := c.Conn.SetReadDeadline(wait); err != nil {
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
