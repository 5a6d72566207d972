package transport

import "syscall"

// setParentDeathSignal makes Linux kill the child if the hub itself dies
// without running the ladder (SIGKILL, a crash).
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
