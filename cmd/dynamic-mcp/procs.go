package main

import (
	"io"
	"os"
	"runtime"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// localProcs is how many processors run the Go code of a hub that serves
// a desktop's clients (standalone over stdio, or the shared hub over its
// socket), where the user set no GOMAXPROCS. Such a hub waits on pipes
// nearly all the time, and a call is a chain of short runs, each woken
// by the one before (the client's request read, the upstream's answer
// read and handed to the waiting call, the answer written). With a
// processor idle, each hand-off also woke another thread to look for work
// (the runtime's spinning), which found none and slept again. On one
// processor a call runs on one thread, and every wait is in the
// runtime's poller (stdin too: see local.Polled and local.WaitingReader),
// which system calls leave free for the other goroutines. Measured
// against two processors (docs/performance.md, "One processor"): a
// quarter fewer context switches a call at 1 in flight and about 15% less
// CPU a call at 32. A desktop's hub needs 20-30 µs of CPU a call, so one
// processor serves tens of thousands of calls a second. The HTTP face, a
// server for many callers, keeps Go's default.
const localProcs = 1

// fewerProcs sets GOMAXPROCS to localProcs unless the environment sets
// GOMAXPROCS (a user's value is honoured, as Go always does).
func fewerProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(localProcs)
	}
}

// stdioInput is what the standalone hub reads its client from: stdin,
// through the poller when the hub runs on one processor (local.Polled).
func stdioInput(stdin io.Reader) io.Reader {
	if f, ok := stdin.(*os.File); ok && runtime.GOMAXPROCS(0) == 1 {
		return local.Polled(f)
	}
	return stdin
}
