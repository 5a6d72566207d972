package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// fakeBin is testdata/fakeupstream, built once by TestMain.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakeupstream")
	if out, err := exec.Command("go", "build", "-o", fakeBin, "../testdata/fakeupstream").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the fake upstream: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every test closes what it opened: a goroutine still running
		// once they all have is one that outlived its owner's Close.
		if err := goleak.Find(leakIgnores...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakIgnores are the goroutines that outlive every test by design, each
// with the reason.
var leakIgnores = []goleak.Option{}
