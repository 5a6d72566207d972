package local

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerPID is the process id of the process at the other end of c, as the
// OS says.
func PeerPID(c *net.UnixConn) (pid int, known bool) {
	onFD(c, func(fd int) {
		if n, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID); err == nil && n > 0 {
			pid, known = n, true
		}
	})
	return pid, known
}
