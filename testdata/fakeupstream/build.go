package fakeupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// SelfEnv, set to "1", makes Build return the test binary: see Build.
const SelfEnv = "FAKEUPSTREAM_SELF"

// Build builds the fake as a program of its own (testdata/fakeupstream/fake)
// and returns the command
// for configs to name. Call it in TestMain after Run, before m.Run. Where
// it cannot be built (no go command or no cache directory where the test
// binary runs, say), the command is Command(), the test binary.
//
// Why not the test binary, as Command: every start of a program runs the
// init of every package linked in, and a test binary links the hub, all
// its dependencies and the tests'. Under -race, a start of the server
// package's test binary as the fake cost 60 ms of CPU and 300 ms of wall
// time on a busy machine; this program's 15 ms and 80 ms; and the tests
// start fakes hundreds of times. Its link is 0.7 s of CPU, once.
//
// The program is built without the race detector, also for tests that
// have it: the fake is no code of the hub's (it imports none), so the
// detector in it watched only the fake, and cost every start 11 ms of CPU
// and 50 ms of wall time against 1.5 ms and 4 ms without (50 starts each
// with stdin closed, load 45), and a 2 MiB message it reads 0.25 s of
// CPU against 0.02 s (ten, load 39).
//
// The program has one place per checkout, in the user's
// cache directory beside go's own build cache, which each build replaces
// (see buildIn): nothing is left to remove when the tests end, so a test
// binary that dies before its cleanup (a timeout's panic) leaves nothing
// behind that the next run does not reuse.
//
// With SelfEnv set to 1 the test binary is the fake, as it was for every
// test before Build (3c1d5a4): a benchmark compared with a build of then
// compares like with like (BenchmarkStdioToolCall: the program's build
// when the test binary starts is 0.36 s of CPU a run, and the two fakes
// differ in when they wake, not in what they are sent).
func Build() string {
	test := Command() // the fallback; it also sets what a race-built child needs
	if os.Getenv(SelfEnv) == "1" {
		return test
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeupstream: no cache directory to build the fake in, the test binary runs as the fake: %v\n", err)
		return test
	}
	bin, err := buildIn(filepath.Join(cache, "dynamic-mcp", "fakeupstream"), "fake-upstream", "github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream/fake")
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeupstream: the fake could not be built, the test binary runs as the fake: %v\n", err)
		return test
	}
	return bin
}

// BuildProgram builds a program of this module for a test as Build
// builds the fake (see buildIn), with go build's args (the package
// last), as the program name in the user's cache directory: a run after
// one of the same sources, Go and flags costs go build's look at them,
// not a link. With no cache directory, the system's temporary one.
func BuildProgram(name string, args ...string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return buildIn(filepath.Join(cache, "dynamic-mcp", "programs"), name, args...)
}

// staleAfter is how long a program in the build directory that no run
// built again is kept (of a checkout deleted since, or a build killed
// half way).
const staleAfter = 7 * 24 * time.Hour

// buildIn builds the fake in dir (go build's args; the program name),
// as the program named after name and this checkout: under a name of this process's, then renamed over the last
// build, in one step, so that the tests of other packages and of another
// run of the suite at the same time, which start the program by that
// name, find it whole. A last build that is up to date is kept as it is.
func buildIn(dir, name string, args ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	bin := filepath.Join(dir, programName(name))
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	// The last build under tmp's name too (a hard link): go build leaves
	// a program it would link the same as it is, where the link was 0.7 s
	// of CPU and 1-3 s of wall time on a busy machine in every package's
	// TestMain. A build that links writes a new file in tmp's place,
	// never into the last build, which other tests may be starting.
	_ = os.Link(bin, tmp)
	out, err := exec.Command("go", append([]string{"build", "-o", tmp}, args...)...).CombinedOutput()
	if err == nil {
		// Built now, as far as the sweep above is concerned: a program in
		// use is not removed as stale while a package's tests start it.
		now := time.Now()
		err = os.Chtimes(tmp, now, now)
	}
	if err == nil {
		err = os.Rename(tmp, bin) // fails on Windows while the last build runs
	}
	// Left by the rename where tmp was bin under another name (a rename
	// of a file onto itself does nothing), and by a failed build.
	os.Remove(tmp)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
}

// programName names a program, name, after the checkout it is built
// from (the directory of the module's go.mod, found from the test's
// working directory, its package's).
func programName(name string) string {
	root, _ := os.Getwd()
	for dir := root; filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			root = dir
			break
		}
	}
	sum := sha256.Sum256([]byte(root))
	return name + "-" + hex.EncodeToString(sum[:8])
}
