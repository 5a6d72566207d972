//go:build !linux

package main

import "runtime/debug"

// releaseMemory returns the heap freed at start to the operating system.
// (On Linux it also drops the start-up's mappings of the program file:
// see release_linux.go.)
func releaseMemory() { debug.FreeOSMemory() }
