package server

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// ownProcessEnv is set in the environment of a test binary started to run
// one test alone (inProcessOfItsOwn), to the fake upstream's command, which
// that binary does not build again.
const ownProcessEnv = "DYNAMIC_MCP_TEST_OWN_PROCESS"

// inProcessOfItsOwn runs t in a test binary of its own and reports whether
// this is that binary, where the caller goes on to run the test. A test
// that measures its process (its heap) or takes its processors
// (GOMAXPROCS) needs the process to itself, which a serial test has only
// by holding back every other test of the package behind it; in a process
// of its own it runs in parallel with them. The parent passes if the
// child's test passed, with the child's output as its log.
func inProcessOfItsOwn(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) != "" {
		return true
	}
	args := []string{"-test.run=^" + t.Name() + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	// Not started as a fake upstream, as this binary's children are.
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+fakeBin, fakeupstream.EnvVar+"=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Started before t.Parallel, so that it runs from the package's start,
	// beside the serial tests and then the parallel ones, not from when a
	// slot of -test.parallel came free: the one-processor attack took
	// the last two minutes of the package alone at load 30.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	err := cmd.Wait()
	// Each line marked as the child's, so that its === RUN and --- PASS
	// lines are not taken for this binary's (go test -json).
	t.Logf("%s in a process of its own:\n%s", t.Name(), regexp.MustCompile(`(?m)^`).ReplaceAll(out.Bytes(), []byte("child| ")))
	if err != nil {
		t.Fatalf("%s in a process of its own: %v", t.Name(), err)
	}
	if !strings.Contains(out.String(), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s did not pass in a process of its own", t.Name())
	}
	return false
}
