package httpguard

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
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
//
// net/http closes such connections without a word (a read that timed out
// is "a common network error" to it): logger (nil: none) gets a line for
// each, with the client's address, at info for a first request whose
// headers did not all come within ReadHeaderTimeout, at debug for a
// connection that sent nothing (a scanner, a browser's unused
// preconnect); at most one line every closedLogEvery, which counts the
// connections closed since the last, so that a scanner's thousands make
// no flood. A later request of a kept-alive connection whose headers did
// not all come within ReadHeaderTimeout is logged at info too (see
// firstByteConn.SetReadDeadline); a kept-alive connection closed idle is
// not logged.
func FirstByteListener(ln net.Listener, wait time.Duration, logger *slog.Logger) net.Listener {
	if wait <= 0 {
		wait = FirstByteWait // never unbounded: a silent connection would be held for ever
	}
	return firstByteListener{ln, wait, &closedLog{logger: logger, every: closedLogEvery}}
}

type firstByteListener struct {
	net.Listener
	wait time.Duration
	log  *closedLog
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c, wait: l.wait, log: l.log}, nil
}

// closedLogEvery is the least time between two lines of closedLog.
const closedLogEvery = 10 * time.Second

// closedLog says that connections were closed for their silence: a line
// at most every every, counting those closed in between.
type closedLog struct {
	logger *slog.Logger
	every  time.Duration

	mu     sync.Mutex // guards last and others
	last   time.Time  // of the last line
	others int        // connections closed since it, not logged
}

// closed logs, at level, that the connection from remote was closed
// because it sent nothing (or not its headers) within d.
func (l *closedLog) closed(level slog.Level, msg string, remote net.Addr, d time.Duration) {
	if l.logger == nil || !l.logger.Enabled(context.Background(), level) {
		return
	}
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.others++
		l.mu.Unlock()
		return
	}
	others := l.others
	l.last, l.others = now, 0
	l.mu.Unlock()
	attrs := []any{"remote", remote.String(), "within", d}
	if others > 0 {
		attrs = append(attrs, "closed_likewise_since_last_line", others)
	}
	l.logger.Log(context.Background(), level, msg, attrs...)
}

// firstByteConn holds back the read deadlines set before its first byte
// has arrived, and applies the last of them shifted by the wait. Until
// then only the connection's own goroutine (net/http's conn.serve) reads
// it and sets its deadlines.
type firstByteConn struct {
	net.Conn
	wait    time.Duration // before the first byte
	log     *closedLog
	started atomic.Bool
	held    time.Time // the deadline held back (zero: none)
	heldAt  time.Time // when it was set
	// inHeaders is which request's headers are being read (firstRequest,
	// laterRequest; 0: none), from the first byte of the first, from the
	// header deadline of a later one (see SetReadDeadline), until net/http
	// next sets a read deadline, which it does once the headers are read:
	// a read that times out meanwhile ran out of its header timeout,
	// headerWait (a time.Duration).
	inHeaders  atomic.Int32
	headerWait atomic.Int64
	// deadlineSet is true when the last read deadline set is not zero,
	// readSince when a read returned bytes since it was set.
	deadlineSet, readSince atomic.Bool
}

const (
	firstRequest = 1 + iota
	laterRequest
)

// SetReadDeadline holds back the deadlines set before the first byte
// (see Read). After it, it tells a later request's header deadline from
// the others by net/http's order (conn.serve): once a request is
// answered, net/http sets the idle deadline, waits for the next
// request's first bytes, then sets its header deadline. So a deadline
// set right after another one that was not zero, with bytes read
// between, is a header deadline. The idle deadline follows a zero one
// (set once the previous request's headers were read, and when a
// pending read is aborted); a handler's (http.ResponseController) does
// too, or follows no read (the hub's handlers set one and clear it, or
// close the connection). A deadline already past is never a header
// deadline, whatever came before it: net/http aborts a pending read with
// one (aLongTimeAgo), as a handler may.
//
// The order holds for a server with no ReadTimeout (which would set a
// whole request's deadline right after the header deadline, and so be
// taken for a later request's header deadline) and an IdleTimeout (else
// the deadline before a later request's first bytes is zero, and its
// header timeout goes unlogged): cmd/dynamic-mcp's http.Server has both.
func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	if c.started.Load() {
		state := int32(0)
		// The clock is read last, only for a deadline that may be a
		// header deadline: net/http sets eight or so a request, most of
		// them zero or following a zero one.
		if !t.IsZero() && c.deadlineSet.Load() && c.readSince.Load() && t.After(time.Now()) {
			state = laterRequest
			c.headerWait.Store(int64(time.Until(t)))
		}
		c.inHeaders.Store(state)
		c.deadlineSet.Store(!t.IsZero())
		c.readSince.Store(false)
		return c.Conn.SetReadDeadline(t)
	}
	c.held, c.heldAt = t, time.Now()
	return nil
}

func (c *firstByteConn) Read(b []byte) (int, error) {
	if c.started.Load() {
		n, err := c.Conn.Read(b)
		if n > 0 && !c.readSince.Load() {
			c.readSince.Store(true)
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			if which := c.inHeaders.Swap(0); which != 0 {
				msg := "closed an HTTP connection: its first request's headers did not all come within the header timeout of its first byte"
				if which == laterRequest {
					msg = "closed a kept-alive HTTP connection: a later request's headers did not all come within the header timeout of its first bytes"
				}
				// To 10 ms: the timeout, not the moments between net/http's
				// clock reading and this connection's.
				c.log.closed(slog.LevelInfo, msg, c.RemoteAddr(), time.Duration(c.headerWait.Load()).Round(10*time.Millisecond))
			}
		}
		return n, err
	}
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.wait)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	c.started.Store(true)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.closed(slog.LevelDebug, "closed an HTTP connection that sent nothing", c.RemoteAddr(), c.wait)
	}
	deadline := c.held
	if !deadline.IsZero() {
		deadline = deadline.Add(time.Since(c.heldAt))
		if n > 0 {
			c.inHeaders.Store(firstRequest)
			c.headerWait.Store(int64(c.held.Sub(c.heldAt)))
		}
	}
	c.deadlineSet.Store(!deadline.IsZero())
	c.readSince.Store(n > 0)
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
