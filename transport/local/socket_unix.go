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

// checkOwner fails when the directory fi describes is not uid's.
func checkOwner(dir string, fi fs.FileInfo, uid int) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return fmt.Errorf("socket directory %s belongs to uid %d, not to this user", dir, st.Uid)
	}
	return nil
}

// checkDialDir fails unless dir is a directory of uid's that no one else
// may write in, as Listen leaves it (privateDir): the bridge sends the
// client's messages only to a socket that no other user could have put
// there. A directory that does not exist is ErrNotRunning.
func checkDialDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: socket directory %s is not a directory", ErrNotTrusted, dir)
	}
	if err := checkOwner(dir, fi, uid); err != nil {
		return fmt.Errorf("%w: %w", ErrNotTrusted, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: socket directory %s is open to other users (mode %#o, want 0700)", ErrNotTrusted, dir, perm)
	}
	return nil
}

// checkPeer fails when the process listening at the other end of c is
// known to run as another user than uid.
func checkPeer(c *net.UnixConn, uid int) error {
	if got, known := peerUID(c); known && got != uid {
		return fmt.Errorf("%w: the process listening on %s runs as uid %d, not this user", ErrNotTrusted, c.RemoteAddr(), got)
	}
	return nil
}

// Dial connects to the hub on p.Socket. It fails with an error that
// errors.Is ErrNotRunning when no hub listens there, and ErrNotTrusted
// when the socket is not surely this user's hub: its directory is not
// the user's alone, or the process listening runs as another user (where
// the OS says): whoever listens gets the Hello and the client's messages.
func Dial(ctx context.Context, p Paths) (*net.UnixConn, error) {
	uid := os.Getuid()
	if err := checkDialDir(p.Dir, uid); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p.Socket)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
		}
		return nil, err
	}
	uc := c.(*net.UnixConn)
	if err := checkPeer(uc, uid); err != nil {
		uc.Close()
		return nil, err
	}
	return uc, nil
}

// ErrNotRunning is Dial's answer when no hub listens on the socket.
var ErrNotRunning = errors.New("no hub is running for this config")

// ErrNotTrusted is Dial's answer when the socket may be another user's.
var ErrNotTrusted = errors.New("the hub's socket is not this user's alone")

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

// onFD runs f on c's descriptor; not at all when c has none (closed).
func onFD(c *net.UnixConn, f func(fd int)) {
	if raw, err := c.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) { f(int(fd)) })
	}
}
