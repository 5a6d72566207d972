package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// The deadlines of the tests that run real parts (node servers, the npm
// clients), in one place. Such a test waits for an event (an answer, a
// line, a process's exit), so a deadline only bounds a hang and is long:
// on a 2-core machine running two copies of the suite (load 30-70) a node
// server took 10-31 s to answer initialize, and a dozen tests whose waits
// were guesses of 10-60 s failed. A passing test never waits them out.

// nodeWaits are the hub settings for a config whose upstreams are node
// servers. connect_timeout bounds a start that hangs: at its 10 s default
// the hub gave up on a node server still starting, and on a loaded machine
// every retry did the same, so the group never came up. startup_wait is
// how long a first list waits for a server still starting: the one-shot
// clients (the Inspector's CLI) see only that first answer, and the
// Inspector 0.21 gives up on a request at the TypeScript SDK's fixed 60 s,
// which no option changes; 45 s answers inside it.
const nodeWaits = "connect_timeout: 3m, startup_wait: 45s"

// firstListWaits are nodeWaits for a client that waits clientTimeout for
// an answer (the raw client, the SDKs' in testdata/sdkclient, the Go
// clients) and checks what the first list holds: the first list waits for
// the server as long as its start may take. Under two copies of the suite
// (load 40-72) node took 12-17 s and more to start the everything server,
// past 45 s at the peaks, when the first list went out without its tools
// (the hub's answer when startup_wait has passed, with list_changed
// later).
const firstListWaits = "connect_timeout: 3m, startup_wait: 3m"

// clientTimeout bounds one request of a test's client (the raw client's,
// the TypeScript SDK's in testdata/sdkclient): longer than nodeWaits'
// connect_timeout, so that the hub, not the client, says when a server did
// not start.
const clientTimeout = 4 * time.Minute

// clientTimeoutMS is clientTimeout in milliseconds, for a client's flag
// (the Inspector's --connect-timeout, the conformance suite's --timeout).
func clientTimeoutMS() string { return strconv.FormatInt(clientTimeout.Milliseconds(), 10) }

// clientTimeoutEnv gives clientTimeout to the scripts in
// testdata/sdkclient: each request of theirs and their own watchdogs.
func clientTimeoutEnv() string { return "SDKCLIENT_TIMEOUT_MS=" + clientTimeoutMS() }

// untilHung is the context of a process the test runs to its end (a node
// client, a one-shot CLI): it ends only when the process hangs, a minute
// before the test binary's -timeout would panic, so that the test says
// what hung and prints the process's output.
func untilHung(t testing.TB) (context.Context, context.CancelFunc) {
	ctx := context.Background()
	if tc, ok := t.(interface{ Context() context.Context }); ok {
		ctx = tc.Context()
	}
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := td.Deadline(); ok {
			return context.WithDeadline(ctx, d.Add(-time.Minute))
		}
	}
	return context.WithCancel(ctx)
}

// startListening starts cmd with a loopback listener of the test's as its
// file descriptor 3 and returns the listener's port. The listener is the
// child's alone from then on: nobody else can take the port, and whatever
// answers there is cmd (not another test's or another suite's server,
// which a port picked free and bound by the child could have been). The
// program must serve on descriptor 3: server-everything with
// testdata/sdkclient/listenfd.cjs preloaded, mcp-go's conformance server
// as conformanceBuild builds it.
func startListening(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close() // f keeps the socket listening
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child's copy is its own
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
