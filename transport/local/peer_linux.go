package local

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid of the process at the other end of c, from
// SO_PEERCRED.
func peerUID(c *net.UnixConn) (uid int, known bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid, known = int(cred.Uid), true
		}
	})
	return uid, known
}
