package local

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid of the process at the other end of c, from
// SO_PEERCRED.
func peerUID(c *net.UnixConn) (uid int, known bool) {
	onFD(c, func(fd int) {
		if cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid, known = int(cred.Uid), true
		}
	})
	return uid, known
}

// PeerPID is the process id of the process at the other end of c, as the
// OS says (in this process's PID namespace; 0 where it is not seen there).
func PeerPID(c *net.UnixConn) (pid int, known bool) {
	onFD(c, func(fd int) {
		if cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
			pid, known = int(cred.Pid), true
		}
	})
	return pid, known
}
