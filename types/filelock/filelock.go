// Package filelock takes an exclusive lock on a file that holds across
// processes: the hubs of several clients, `auth login` and `tools` share
// one token store, pin directory and audit trail, and each rewrite of one
// of those files is a read-modify-write that must not interleave with
// another's.
//
// The lock is flock(2) on Unix and LockFileEx on Windows. Both belong to
// the open file, not the process: two handles of one process exclude each
// other too, and the kernel releases the lock when the file is closed,
// which it does when its process dies, however it dies. A lock file left
// by a crashed process therefore never blocks anyone: what is left is an
// empty file, not a lock. Waiting is bounded: Acquire gives up with
// ErrTimeout, naming the file, rather than wedge behind a process that
// holds the lock and does not let go (one stopped under a debugger, say).
//
// On NFS, Linux emulates flock with POSIX record locks, which belong to
// the process: processes still exclude each other, two handles of one
// process no longer do. Acquire therefore has the callers of one process
// take turns by the lock file's path first, whatever the filesystem.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrTimeout says the lock was held by someone else for all of the wait.
var ErrTimeout = errors.New("another process holds the lock")

// Lock is an exclusive lock on a file, held until Unlock.
type Lock struct {
	f     *os.File
	own   bool          // the lock opened f, so Unlock closes it
	token chan struct{} // Acquire's turn in this process, given back by Unlock
}

// turns holds, by lock file path, a token (a channel of one) that the
// callers of this process take before the file lock.
var turns sync.Map

// Acquire opens path (creating it empty, mode 0600) and locks it, waiting
// at most wait (a wait of 0 tries once), and no longer than ctx. The
// directory must exist.
func Acquire(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	start := time.Now()
	key := path
	if abs, err := filepath.Abs(path); err == nil {
		key = abs
	}
	v, _ := turns.LoadOrStore(key, make(chan struct{}, 1))
	token := v.(chan struct{})
	select {
	case token <- struct{}{}:
	default:
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		select {
		case token <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-deadline.C:
			return nil, fmt.Errorf("lock %s: %w (waited %s, in this process)", path, ErrTimeout, time.Since(start).Round(time.Millisecond))
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		<-token
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	l, err := File(ctx, f, max(0, wait-time.Since(start)))
	if err != nil {
		f.Close()
		<-token
		return nil, err
	}
	l.own, l.token = true, token
	return l, nil
}

// File locks the open file f itself; Unlock unlocks it and leaves it
// open. On Windows, where locks are mandatory, the lock covers one byte
// far beyond any data, so that reading and writing f are not refused
// while it is held (an audit trail a user tails, say).
func File(ctx context.Context, f *os.File, wait time.Duration) (*Lock, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	pause := time.Millisecond
	start := time.Now()
	for {
		ok, err := tryLock(f)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if ok {
			return &Lock{f: f}, nil
		}
		// Polled, not a blocking call: a blocked flock cannot be called
		// off when ctx ends or the wait is over.
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", f.Name(), ctx.Err())
		case <-deadline.C:
			return nil, fmt.Errorf("lock %s: %w (waited %s)", f.Name(), ErrTimeout, time.Since(start).Round(time.Millisecond))
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// Unlock releases the lock (and closes the file when Acquire opened it).
// Unlocking twice is a no-op.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	err := unlock(f)
	if l.own {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if l.token != nil {
		<-l.token
	}
	if err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

// control runs fn on f's descriptor, through SyscallConn rather than Fd,
// which would switch the file to blocking mode.
func control(f *os.File, fn func(fd uintptr) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(fd) }); err != nil {
		return err
	}
	return ferr
}
