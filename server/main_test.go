package server

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// fakeBin is the command of the fake upstream, testdata/fakeupstream built
// by TestMain (fakeupstream.Build).
var fakeBin string

// testClient is the tests' client in place of http.DefaultClient (and
// http.Get, http.Post), whose idle connections every httptest.Server.Close
// closes: a parallel test's POST that had just taken one failed under load
// ("http: CloseIdleConnections called"; a POST is not sent again).
var testClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func TestMain(m *testing.M) {
	fakeupstream.Run() // started as a fake upstream: serve, then exit
	// The tests wait (for upstreams to start, for timers) far more than
	// they compute: a whole run used 56 s of CPU, and took 155 s beside
	// cmd/dynamic-mcp's on a quiet 2-core machine, so they run in
	// parallel, but for those that set the environment (t.Setenv) or look
	// at the process's goroutines; a test that measures the process or
	// takes its processors runs in a process of its own
	// (inProcessOfItsOwn). At go test's default of one a core: four a
	// core failed three tests in a stress run (calls past their 5 s
	// call_timeout, on a machine running the suite twice, four packages
	// at once each), twice.
	if bin := os.Getenv(ownProcessEnv); bin != "" {
		fakeupstream.Command() // its children as the parent's, should bin be a test binary
		fakeBin = bin          // built by the test binary that started this one
	} else {
		fakeBin = fakeupstream.Build()
	}
	code := pgtest.Shared(m).Run()
	if code == 0 {
		// Every test closes what it opened: a goroutine still running
		// once they all have is one that outlived its owner's Close.
		testClient.CloseIdleConnections()
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
