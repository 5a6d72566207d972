package server

import (
	"os"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// fakeBin is the command of the fake upstream: this test binary, which
// TestMain turns into testdata/fakeupstream in the children it starts.
var fakeBin string

func TestMain(m *testing.M) {
	fakeupstream.Run() // started as a fake upstream: serve, then exit
	fakeBin = fakeupstream.Command()
	os.Exit(m.Run())
}
