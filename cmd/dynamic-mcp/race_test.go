//go:build race

package main

import "os"

// Under go test -race the hub binary is built with the race detector too,
// so the integration tests check the hub's own goroutines, not just the
// test's. A race-built program sleeps a second at exit to let reports
// flush (atexit_sleep_ms); the tests start it hundreds of times, and its
// reports go to stderr, which every test collects before it looks, so the
// children skip that sleep.
func init() {
	buildFlags = append(buildFlags, "-race")
	gorace := os.Getenv("GORACE")
	if gorace != "" {
		gorace += " "
	}
	os.Setenv("GORACE", gorace+"atexit_sleep_ms=0")
}
