//go:build unix && !linux

package pgtest

import "syscall"

// dieWithUs does nothing where the kernel has no parent-death signal.
func dieWithUs(*syscall.SysProcAttr) {}
