//go:build race

package main

import "os"

// Under go test -race the programs the tests build are built with the
// race detector too, and so is the hub where a test checks the hub's own
// goroutines (raceHubBin; see hubbuild_test.go). A race-built program sleeps a second at exit to let reports
// flush (atexit_sleep_ms); the tests start it hundreds of times, and its
// reports go to stderr, which every test collects before it looks, so the
// children skip that sleep.
func init() {
	raceDetector = true
	buildFlags = append(buildFlags, "-race")
	gorace := os.Getenv("GORACE")
	if gorace != "" {
		gorace += " "
	}
	os.Setenv("GORACE", gorace+"atexit_sleep_ms=0")
}
