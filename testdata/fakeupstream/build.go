package fakeupstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// SelfEnv, set to "1", makes Build return the test binary: see Build.
const SelfEnv = "FAKEUPSTREAM_SELF"

// Build builds the fake as a program of its own (testdata/fakeupstream/fake,
// with the race detector when the tests have it) in a directory of its
// own, and returns its path, the command for configs to name, and the
// func that removes it once the tests have run. Call it in TestMain after
// Run, before m.Run. Where it cannot be built (no go command where the
// test binary runs, say), the command is Command(), the test binary.
//
// Why not the test binary, as Command: every start of a program runs the
// init of every package linked in, and a test binary links the hub, all
// its dependencies and the tests'. Under -race, a start of the server
// package's test binary as the fake cost 60 ms of CPU and 300 ms of wall
// time on a busy machine; this program's 15 ms and 80 ms; and the tests
// start fakes hundreds of times. Its link is 0.7 s of CPU, once.
//
// With SelfEnv set to 1 the test binary is the fake, as it was for every
// test before Build (3c1d5a4): a benchmark compared with a build of then
// compares like with like (BenchmarkStdioToolCall: the program's build in
// TestMain is 0.36 s of CPU a run, and the two fakes differ in when they
// wake, not in what they are sent).
func Build() (string, func()) {
	test := Command() // the fallback; it also sets what a race-built child needs
	if os.Getenv(SelfEnv) == "1" {
		return test, func() {}
	}
	dir, err := os.MkdirTemp("", "fakeupstream")
	if err != nil {
		return test, func() {}
	}
	bin := filepath.Join(dir, "fake-upstream")
	args := []string{"build", "-o", bin}
	if raceBuilt {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream/fake")...).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "fakeupstream: the fake could not be built, the test binary runs as the fake: %v\n%s", err, out)
		return test, func() {}
	}
	return bin, func() { os.RemoveAll(dir) }
}
