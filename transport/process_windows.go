package transport

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Windows has no process groups to signal: the child itself is stopped,
// and a grandchild it leaves is the child's to end.
const (
	sigTerm = syscall.Signal(0xf)
	sigKill = syscall.Signal(0x9)
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func signalGroup(cmd *exec.Cmd, _ syscall.Signal) { _ = cmd.Process.Kill() }

func groupAlive(*exec.Cmd) bool { return false }

func describeExit(ee *exec.ExitError) string {
	var errno syscall.Errno
	if errors.As(ee, &errno) {
		return fmt.Sprintf("exited: %v", errno)
	}
	return fmt.Sprintf("exited (status %d)", ee.ExitCode())
}

// dupFile has no duplicate on Windows, where closing a pipe does not end
// a read of it: Close's drain is Unix's.
func dupFile(*os.File) (*os.File, error) {
	return nil, errors.New("no duplicate read end on Windows")
}

// unread cannot tell here: another OS's FIONREAD on a pipe's write end
// does not count what its reader has not read.
func unread(*os.File) (int, bool) { return 0, false }
