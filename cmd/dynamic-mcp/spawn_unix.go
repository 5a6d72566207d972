//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// spawnDetached starts exe with args in dir with env, in a session of its own (no
// controlling terminal, its own process group: a Ctrl-C or a client that
// kills the bridge's group does not reach it), stdin and stdout
// /dev/null, stderr to logFile. exited yields the process's end; the
// goroutine that waits for it ends with the process.
func spawnDetached(exe string, args []string, dir string, env []string, logFile *os.File) (exited <-chan error, err error) {
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return ch, nil
}

// processAlive reports whether a process pid exists (and is not a
// zombie we could reap: the hub is never this process's child for long).
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// terminate sends pid SIGTERM, and SIGCONT for a stopped process; one
// gone already is no error.
func terminate(pid int) error {
	if pid <= 0 { // 0 and -1 would signal a group, or every process
		return fmt.Errorf("no process %d", pid)
	}
	err := syscall.Kill(pid, syscall.SIGTERM)
	if err == nil {
		// A stopped process (SIGSTOP, Ctrl-Z) acts on it once woken.
		err = syscall.Kill(pid, syscall.SIGCONT)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// ownSession makes cmd start in a session of its own (it can take no
// terminal) and be killed with its whole process group when its context
// ends.
func ownSession(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killGroup kills what is left of cmd's process group (a background job
// of a login shell that has exited).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
