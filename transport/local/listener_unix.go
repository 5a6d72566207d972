//go:build unix

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Listen listens on p.Socket, in its private directory, and admits only
// peers of this user's uid (where the OS tells the peer's uid). A socket
// file already there is removed only when nothing answers on it: a hub
// that is listening is not displaced, and Listen fails with ErrRunning.
// The listener's Keep listens again when the file is deleted or replaced.
func Listen(p Paths) (net.Listener, error) {
	ln, file, err := listenAt(p)
	if err != nil {
		return nil, err
	}
	return &listener{paths: p, ln: ln, file: file, unlink: true}, nil
}

// listenAt listens on p.Socket as Listen says, and returns the socket
// file it made.
func listenAt(p Paths) (*net.UnixListener, fs.FileInfo, error) {
	if err := privateDir(p.Dir); err != nil {
		return nil, nil, err
	}
	c, err := net.DialTimeout("unix", p.Socket, time.Second)
	switch {
	case err == nil:
		c.Close()
		return nil, nil, ErrRunning
	case !stale(err):
		// Not surely stale (a listener whose backlog is full, no file
		// descriptor left): what is there is left as it is.
		return nil, nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	if err := os.Remove(p.Socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Socket, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	// The file is unlinked by the listener, and only while it is its own
	// (see Close).
	ln.SetUnlinkOnClose(false)
	// The directory already keeps others out; the socket's own mode says
	// the same where a system honours it.
	if err := os.Chmod(p.Socket, 0o600); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	file, err := os.Lstat(p.Socket)
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	return ln, file, nil
}

// stale reports whether a dial's err says that nothing listens at the
// path: nothing there, a socket file whose listener is gone, a file that
// is no socket (a regular file: ECONNREFUSED on Linux), a symlink loop.
func stale(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ENOENT, syscall.ENOTSOCK, syscall.ELOOP} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// ErrRunning is Listen's answer when a hub already listens on the socket.
var ErrRunning = errors.New("a hub is already running for this config")

// listener refuses connections from other users, and listens again (Keep)
// when its socket file is gone.
type listener struct {
	paths Paths

	mu     sync.Mutex // guards the fields below
	ln     *net.UnixListener
	file   fs.FileInfo // the socket file ln listens on
	unlink bool        // Close removes the file, when it is still file
	closed bool
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln := l.ln
		l.mu.Unlock()
		c, err := ln.AcceptUnix()
		if err != nil {
			l.mu.Lock()
			replaced := l.ln != ln && !l.closed
			l.mu.Unlock()
			if replaced { // by Keep: accept on the new one
				continue
			}
			return nil, err
		}
		uid, known := peerUID(c)
		if known && uid != os.Getuid() {
			c.Close()
			continue
		}
		return c, nil
	}
}

func (l *listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ln.Addr()
}

// Close stops listening, and removes the socket file when it is still the
// listener's own: never another hub's that took the path since.
func (l *listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.unlink && l.own() {
		_ = os.Remove(l.paths.Socket)
	}
	return l.ln.Close()
}

// SetUnlinkOnClose says whether Close removes the socket file (the tests
// leave a stale one).
func (l *listener) SetUnlinkOnClose(unlink bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unlink = unlink
}

// own reports whether the socket's path still leads to the file the
// listener made (a symlink to it, where it was moved, does too); l.mu held.
func (l *listener) own() bool {
	fi, err := os.Stat(l.paths.Socket)
	if err != nil {
		// Only a path that leads nowhere is surely lost; on another
		// error (a look refused for a moment) it is taken to be kept.
		return !errors.Is(err, fs.ErrNotExist)
	}
	return os.SameFile(fi, l.file)
}

// Keep makes the socket's directory private again (made anew, its mode
// 0700), and listens on the socket's path again when it no longer leads
// to the listener's file (deleted, or replaced by another file: a cleanup
// of the directory, a user's mistake), so that bridges and `stop` find
// the hub there again; it reports whether it listened again. Where
// another process answers on the path now, it leaves that be and fails
// with ErrRunning. The connections open stay open.
func (l *listener) Keep() (relistened bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, nil
	}
	if err := privateDir(l.paths.Dir); err != nil {
		return false, err
	}
	if l.own() {
		return false, nil
	}
	ln, file, err := listenAt(l.paths)
	if err != nil {
		return false, err
	}
	old := l.ln
	l.ln, l.file = ln, file
	old.Close() // its Accept returns, and goes on with ln
	return true, nil
}
