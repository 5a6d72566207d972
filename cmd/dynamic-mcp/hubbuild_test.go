package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// Which build of this package runs as the hub a test starts.
//
// Under go test -race the hubs could all be this test binary, built with
// the race detector, but a race-built hub costs about twice the CPU of a
// plain one, and most of what a hub does here (a stdio client's requests
// in turn, a config, a CLI command) is code the in-process -race tests of
// ./server and the other packages check already. So hubBin is a build
// without the race detector, and raceHubBin, the race build, is the hub
// where only a hub process can show a race, and where a test looks for the
// race detector's reports on the hub's stderr (raceChecked):
//   - the shared hub and its bridges: the socket's hand-off between
//     processes, a bridge's signals and stdio, the hub's sessions of many
//     bridges (every hub a sharedSetup's config starts);
//   - HTTP hubs (startHTTPHub), whose clients' sessions and requests come
//     at once, on goroutines of net/http (but those of the tests of what
//     the hub answers or shows, startPlainHTTPHub: the conformance
//     suites, the inspector's redaction);
//   - replicas of one store (startReplica), and the floods of relay and
//     resume that they serve;
//   - a stdio hub under a test that calls raceHub: a flood of concurrent
//     calls, a reload on SIGHUP while requests run.
//
// Hubs started otherwise get hubBin, and no test looks for a race report
// on their stderr: a check that cannot fail checks nothing.
var (
	// raceDetector is set when this test binary is a race build
	// (race_test.go).
	raceDetector bool
	// raceHubBin is the hub command built with the race detector when
	// the tests are (see above); hubBin otherwise.
	raceHubBin string
	// plainHubBuild is the test binary hubBin runs: plainTestBinary under
	// -race (or testBin, should it fail to build), else testBin.
	plainHubBuild string
	// raceHubTests are the names of the tests (and so of their subtests)
	// whose hubs are raceHubBin (raceHub).
	raceHubTests sync.Map
)

// raceHub makes the hubs that t and its subtests start with startHub,
// startHubEnv or startHubProcess the race build (raceHubBin).
func raceHub(t testing.TB) { raceHubTests.Store(t.Name(), true) }

// hubFor is the hub command for t: raceHubBin if t or a test it is a
// subtest of called raceHub, else hubBin.
func hubFor(t testing.TB) string {
	for name := t.Name(); ; {
		if _, ok := raceHubTests.Load(name); ok {
			return raceHubBin
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return hubBin
		}
		name = name[:i]
	}
}

// raceChecked reports whether bin, a command a test started, is a race
// build, whose stderr the test checks for the race detector's reports:
// under -race, raceHubBin, testBin, and hubBin where plainTestBinary
// could not be built.
func raceChecked(bin string) bool {
	return raceDetector && (bin == raceHubBin || bin == testBin || bin == hubBin && plainHubBuild == testBin)
}

// writeHubCommands writes the hub commands into dir: hubBin and
// raceHubBin, scripts that run a build of this test binary as the hub
// (see TestMain). Under -race, hubBin's build is plainTestBinary; should
// that fail to build, every hub is the race build, as it was before there
// were two.
func writeHubCommands(dir string) error {
	hubBin = filepath.Join(dir, "dynamic-mcp")
	raceHubBin = hubBin
	plain := testBin
	if raceDetector {
		raceHubBin = filepath.Join(dir, "race", "dynamic-mcp")
		if err := os.Mkdir(filepath.Dir(raceHubBin), 0o700); err != nil {
			return err
		}
		if err := writeHubScript(raceHubBin, testBin); err != nil {
			return err
		}
		bin, err := plainTestBinary()
		if err != nil {
			fmt.Fprintf(os.Stderr, "the hub without the race detector could not be built, every hub the tests start is the race build: %v\n", err)
			bin = testBin
		}
		plain = bin
	}
	plainHubBuild = plain
	return writeHubScript(hubBin, plain)
}

// writeHubScript writes the hub command at path: a script that sets
// hubEnvVar and execs bin, so that the hub keeps the script's process id.
func writeHubScript(path, bin string) error {
	script := fmt.Sprintf("#!/bin/sh\nexport %s=1\nexport %s=\"${%s:-off}\"\nexport %s=\"${%s-text}\"\nexec %s \"$@\"\n", hubEnvVar, sharedEnvVar, sharedEnvVar, logFormatEnvVar, logFormatEnvVar, shellQuote(bin))
	return os.WriteFile(path, []byte(script), 0o700)
}

// plainTestBinary is this package's test binary built without the race
// detector (go test -c), with the same hooks as testBin (TestMain's hub,
// servePprof, the fake upstream, the auth client), and the build tags
// testBin was built with. It is kept (cachedBuild) under a digest of
// testBin, whose bytes change with any change of the sources, Go or the
// flags: a run after one of the same build costs only that digest, about
// a tenth of a second, where go test -c links again, 7 s of CPU (and
// compiles the non-race packages, 63 s, when go's cache has none).
func plainTestBinary() (string, error) {
	f, err := os.Open(testBin)
	if err != nil {
		return "", err
	}
	digest := sha256.New()
	_, err = io.Copy(digest, f)
	f.Close()
	if err != nil {
		return "", err
	}
	args := []string{"test", "-c", "-race=false"}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				args = append(args, "-tags="+s.Value)
			}
		}
	}
	fmt.Fprintln(digest, args)
	bin, out, err := cachedBuild("hub-test", digest.Sum(nil), func(path string) ([]byte, error) {
		// The test runs in this package's directory.
		return exec.Command("go", append(args, "-o", path, ".")...).CombinedOutput()
	})
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
}

// TestHubBuilds checks that under -race hubBin runs a build without the
// race detector, which is no use to the tests unless it is one, and
// raceHubBin the race build.
func TestHubBuilds(t *testing.T) {
	if !raceDetector {
		t.Skip("not a race build: every hub is this test binary")
	}
	race := func(bin string) bool {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range info.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
		return false
	}
	if plainHubBuild == testBin || race(plainHubBuild) {
		t.Errorf("hubBin runs %s, a race build", plainHubBuild)
	}
	if !race(testBin) {
		t.Errorf("raceHubBin runs %s, not a race build", testBin)
	}
	for bin, want := range map[string]string{hubBin: plainHubBuild, raceHubBin: testBin} {
		if script, err := os.ReadFile(bin); err != nil || !strings.Contains(string(script), "exec "+shellQuote(want)+" ") {
			t.Errorf("%s does not exec %s: %s %v", bin, want, script, err)
		}
	}
}
