//go:build race

package main

// Under go test -race the hub binary is built with the race detector too,
// so the integration tests check the hub's own goroutines, not just the
// test's.
func init() { buildFlags = append(buildFlags, "-race") }
