//go:build !unix

package main

import (
	"errors"
	"os"
	"os/exec"
)

// spawnDetached is not needed where there is no shared hub.
func spawnDetached(string, []string, string, []string, *os.File) (<-chan error, error) {
	return nil, errors.New("the shared hub is not supported on this OS")
}

func processAlive(int) bool { return false }

// terminate cannot signal a process here (no shared hub runs here).
func terminate(int) error { return errors.ErrUnsupported }

// ownSession leaves cmd as it is: nothing runs a login shell here.
func ownSession(*exec.Cmd) {}

// killGroup has nothing to kill here.
func killGroup(*exec.Cmd) {}
