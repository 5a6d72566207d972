//go:build unix && !linux

package transport

import (
	"os"
	"syscall"
)

func setParentDeathSignal(*syscall.SysProcAttr) {}

// unread cannot tell here: another OS's FIONREAD on a pipe's write end
// does not count what its reader has not read.
func unread(*os.File) (int, bool) { return 0, false }
