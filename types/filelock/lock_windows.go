//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffsetHigh places the locked byte beyond any file's data, as a
// Windows lock refuses I/O into the range it covers.
const lockOffsetHigh = 0x7fffffff

func tryLock(f *os.File) (bool, error) {
	var ok bool
	err := control(f, func(fd uintptr) error {
		ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
		err := windows.LockFileEx(windows.Handle(fd), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
		switch {
		case err == nil:
			ok = true
			return nil
		case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
			return nil
		}
		return err
	})
	return ok, err
}

func unlock(f *os.File) error {
	return control(f, func(fd uintptr) error {
		return windows.UnlockFileEx(windows.Handle(fd), 0, 1, 0, &windows.Overlapped{OffsetHigh: lockOffsetHigh})
	})
}
