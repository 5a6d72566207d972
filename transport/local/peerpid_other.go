//go:build !linux && !darwin

package local

import "net"

// PeerPID is not known here.
func PeerPID(*net.UnixConn) (int, bool) { return 0, false }
