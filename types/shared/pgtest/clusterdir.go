//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// makeClusterDir makes the directory of a new cluster (its data, its
// socket): under memDir where it has room, else under the system's
// temporary directory, named after this process so that what a test
// binary killed before its cleanups left (a timeout's panic) is removed
// by the next one to start a cluster there (sweepLeft).
func makeClusterDir() (string, error) {
	parent := memDir()
	if parent == "" {
		parent = os.TempDir()
	}
	sweepLeft(parent)
	return os.MkdirTemp(parent, fmt.Sprintf("pgtest-%d-", os.Getpid()))
}

// sweepLeft removes the clusters' directories in parent made by a
// process that no longer runs: in memory (memDir), they would hold it
// until a reboot. The server of such a cluster has stopped (dieWithUs)
// or is stopping.
func sweepLeft(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "pgtest-*-*"))
	for _, dir := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), "pgtest-"), "-")
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || n == os.Getpid() {
			continue
		}
		if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir) // another user's stays: not ours to remove
		}
	}
}
