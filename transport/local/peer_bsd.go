//go:build darwin || freebsd

package local

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid of the process at the other end of c, from
// LOCAL_PEERCRED (what getpeereid reads).
func peerUID(c *net.UnixConn) (uid int, known bool) {
	onFD(c, func(fd int) {
		if cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED); err == nil {
			uid, known = int(cred.Uid), true
		}
	})
	return uid, known
}
