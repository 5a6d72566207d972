//go:build unix && !linux

package pgtest

// memDir is "" where no memory file system is known: clusters are made
// under the system's temporary directory.
func memDir() string { return "" }
