//go:build unix

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes flock(2) without waiting. flock, not fcntl: an fcntl lock
// belongs to the process, so two handles of one process would not exclude
// each other, and closing any handle of the file would drop it.
func tryLock(f *os.File) (bool, error) {
	var ok bool
	err := control(f, func(fd uintptr) error {
		for {
			err := unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			switch {
			case err == nil:
				ok = true
				return nil
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.EWOULDBLOCK):
				return nil
			}
			return err
		}
	})
	return ok, err
}

func unlock(f *os.File) error {
	return control(f, func(fd uintptr) error { return unix.Flock(int(fd), unix.LOCK_UN) })
}
