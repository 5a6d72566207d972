//go:build unix

// What the tests need of the OS by pid and by path, the Unix way.

package main

import "syscall"

// noSuchProcess reports whether no process pid exists (a zombie still
// does: see processGone).
func noSuchProcess(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

// killPID sends SIGKILL to process pid.
func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// makeFIFO makes a named pipe at path.
func makeFIFO(path string) error { return syscall.Mkfifo(path, 0o600) }
