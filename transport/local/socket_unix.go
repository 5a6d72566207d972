//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// Supported reports whether this OS has the shared hub's transport.
const Supported = true

// checkOwner fails when the directory fi describes is not the user's.
func checkOwner(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("socket directory %s belongs to uid %d, not to this user", dir, st.Uid)
	}
	return nil
}

// Listen listens on p.Socket, in its private directory, and admits only
// peers of this user's uid (where the OS tells the peer's uid). A socket
// file already there is removed only when nothing answers on it: a hub
// that is listening is not displaced, and Listen fails with ErrRunning.
func Listen(p Paths) (net.Listener, error) {
	if err := privateDir(p.Dir); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", p.Socket, time.Second); err == nil {
		c.Close()
		return nil, ErrRunning
	}
	if err := os.Remove(p.Socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	// The directory already keeps others out; the socket's own mode says
	// the same where a system honours it.
	if err := os.Chmod(p.Socket, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	return &listener{UnixListener: ln}, nil
}

// ErrRunning is Listen's answer when a hub already listens on the socket.
var ErrRunning = errors.New("a hub is already running for this config")

// listener refuses connections from other users.
type listener struct{ *net.UnixListener }

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
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

// Dial connects to the hub on p.Socket. It fails with an error that
// errors.Is ErrNotRunning when no hub listens there.
func Dial(ctx context.Context, p Paths) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p.Socket)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
		}
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// ErrNotRunning is Dial's answer when no hub listens on the socket.
var ErrNotRunning = errors.New("no hub is running for this config")

// Lock takes the lock at p.Lock, waiting for whoever holds it until ctx
// is done; unlock releases it. Bridges hold it while they look for the
// hub and start one, so that bridges started at once start one hub. It is
// an advisory lock (flock) that the kernel releases if its holder dies.
func Lock(ctx context.Context, p Paths) (unlock func(), err error) {
	if err := privateDir(p.Dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p.Lock, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p.Lock, ctx.Err())
		case <-t.C:
		}
	}
}
