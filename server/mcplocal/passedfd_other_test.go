//go:build unix && !linux

package mcplocal

import (
	"os"
	"testing"
)

// checkPassedReopened checks nothing: only Linux opens a passed pipe
// again (local.OwnPipe).
func checkPassedReopened(*testing.T, *os.File, bool) {}
