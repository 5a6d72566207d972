//go:build unix

package pgstore

import (
	"net"
	"syscall"
)

// quiet reports whether nothing waits to be read on an idle connection
// (c, pgconn's): a backend the server ended (pg_terminate_backend, a
// restart, idle_session_timeout) sent its error and closed, which a peek
// at the socket sees at once, without a round trip; an idle connection
// otherwise hears nothing. One that is not a socket counts as quiet.
func quiet(c net.Conn) bool {
	if t, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	nothing := true
	var b [1]byte
	// Control, not Read: Read waits for the socket's read lock, which
	// pgconn's background reader may hold, blocked until the server
	// sends something (it reads while a slow write goes on and stops
	// after one more read). The peek takes nothing from it.
	_ = rc.Control(func(fd uintptr) {
		// The socket is non-blocking (Go's): EAGAIN is nothing to read,
		// 0 bytes the server's close, more its message.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		nothing = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	})
	return nothing
}
