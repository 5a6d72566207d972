//go:build !unix

package pgstore

import "net"

// quiet cannot peek at a socket here: an idle connection is pinged only
// after pingAfterIdle.
func quiet(net.Conn) bool { return true }
