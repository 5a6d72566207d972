package pgtest

import "syscall"

// dieWithUs asks the kernel to stop the server when the test binary dies
// without its cleanups (a timeout's panic, a kill): fast shutdown, as
// stop asks, instead of a cluster left running.
func dieWithUs(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGINT }
