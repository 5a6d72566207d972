package transport

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal makes Linux kill the child if the hub itself dies
// without running the ladder (SIGKILL, a crash).
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// unread is how many bytes written to f, a pipe's write end, its reader
// has not read yet (FIONREAD, TIOCINQ in x/sys; Linux answers it on
// either end of a pipe).
func unread(f *os.File) (n int, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
