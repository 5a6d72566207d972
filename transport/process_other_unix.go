//go:build unix && !linux

package transport

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
