package server

import (
	"fmt"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// fakeBin is the command of the fake upstream: this test binary, which
// TestMain turns into testdata/fakeupstream in the children it starts.
var fakeBin string

func TestMain(m *testing.M) {
	fakeupstream.Run() // started as a fake upstream: serve, then exit
	fakeBin = fakeupstream.Command()
	code := pgtest.Shared(m).Run()
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
