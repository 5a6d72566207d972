//go:build !unix

// What the tests need of the OS by pid and by path where Unix calls are
// not at hand: the tests that use them run on Unix, this lets them compile.

package main

import (
	"errors"
	"os"
)

// noSuchProcess reports whether no process pid can be opened.
func noSuchProcess(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}

// killPID ends process pid.
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// makeFIFO fails: there are no named pipes in the file system here.
func makeFIFO(string) error { return errors.New("no named pipes on this OS") }
