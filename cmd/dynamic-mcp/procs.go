package main

import (
	"io"
	"os"
	"runtime"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// localProcs is how many processors run the Go code of a hub that serves
// a desktop's clients (standalone over stdio, or the shared hub over its
// socket) once its upstreams have started, where the user set no
// GOMAXPROCS. Such a hub waits on pipes nearly all the time, and a call
// is a chain of short runs, each woken by the one before (the client's
// request read, the upstream's answer read and handed to the waiting
// call, the answer written). With a processor idle, each hand-off also
// woke another thread to look for work (the runtime's spinning), which
// found none and slept again. On one processor a call runs on one thread,
// and every wait is in the runtime's poller (stdin and stdout too: see
// local.Polled, local.PolledOut and local.WaitingReader), which system
// calls leave free for the other goroutines; those reads and writes are
// raw system calls (types/rawio), which do not wake the runtime's monitor
// thread. Measured against two processors (docs/performance.md, "One
// processor"): a third fewer context switches a call at 1 in flight,
// and a tenth to a fifth less CPU a call at 32. A desktop's hub needs
// 20-30 µs of CPU a call, so one processor serves tens of thousands of
// calls a second. The start (children started, lists fetched, schemas compiled)
// keeps every processor; the HTTP face, a server for many callers, keeps
// Go's default throughout.
const localProcs = 1

// fewerProcs reports whether a desktop's hub goes down to localProcs once
// started: unless the environment sets GOMAXPROCS (a user's value is
// honoured, as Go always does).
func fewerProcs(getenv func(string) string) bool { return getenv("GOMAXPROCS") == "" }

// stdioInput is what the standalone hub reads its client from: stdin,
// through the poller when the hub goes down to one processor
// (local.Polled).
func stdioInput(stdin io.Reader, fewer bool) io.Reader {
	if f, ok := stdin.(*os.File); ok && fewer {
		return local.Polled(f)
	}
	return stdin
}

// stdioOutput is what the standalone hub writes its client's answers to:
// stdout, through the poller when the hub goes down to one processor
// (local.PolledOut), so that a client slow to read holds up no other
// goroutine, and the answers are written without a system call the
// scheduler must hear of (types/rawio).
func stdioOutput(stdout io.Writer, fewer bool) io.Writer {
	if f, ok := stdout.(*os.File); ok && fewer {
		return local.PolledOut(f)
	}
	return stdout
}

// settledProcs is called once the hub's upstreams have started: a
// desktop's hub goes down to localProcs.
func settledProcs(fewer bool) {
	if fewer {
		runtime.GOMAXPROCS(localProcs)
	}
}
