//go:build !linux

package main

import (
	"os"
	"testing"
)

// openPTY skips: the pseudo-terminal is opened the Linux way.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Skip("the pseudo-terminal is opened the Linux way")
	return nil, nil
}
