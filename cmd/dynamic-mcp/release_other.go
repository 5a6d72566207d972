//go:build !linux

package main

import (
	"runtime/debug"
	"time"
)

// releaseMemory returns the heap freed at start to the operating system.
// (On Linux it also drops the start-up's mappings of the program file:
// see release_linux.go.)
func releaseMemory() { debug.FreeOSMemory() }

// noteMappings does nothing here (on Linux it takes releaseMemory's first
// look at the files' mappings).
func noteMappings() {}

// processCPU is nil here: releaseWhenQuiet does nothing (what it gives
// back on Linux is mostly the program file's pages).
var processCPU func() time.Duration

// processResident is nil here, as processCPU.
var processResident func() uint64
