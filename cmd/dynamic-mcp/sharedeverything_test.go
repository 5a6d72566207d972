package main

import (
	"sync"
	"testing"
)

// sharedEverything is the package's one server-everything over
// Streamable HTTP (sharedEverythingURL), started by the first test that
// asks for it and stopped when the tests end (stopSharedEverything).
var sharedEverything struct {
	mu sync.Mutex
	p  *everythingProcess
}

// sharedEverythingURL is the Streamable HTTP URL of the package's one
// server-everything, for a hub's group (url:) of a test that needs a real
// reference server behind the hub and nothing of a process of its own:
// not the stdio transport, not the environment or command line the hub
// gives its child, not a server it can stop. Each connection to it is an
// MCP session of its own, and the server keeps its state per session
// (its streamableHttp transport makes a server with createServer for
// each: the task store, the tools offered for the client's capabilities,
// the log level; simulated logging, resource updates and roots are kept
// by session id), so one test's hub cannot see another's. Starting it
// once saves a node start (some 0.4 s of CPU) a hub.
func sharedEverythingURL(t testing.TB) string {
	t.Helper()
	s := &sharedEverything
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		select {
		case <-s.p.exited:
			t.Fatalf("the tests' shared server-everything exited: %s", s.p.out)
		default:
		}
	} else {
		s.p = startEverythingProcess(t, "streamableHttp")
	}
	return "http://127.0.0.1:" + s.p.port + "/mcp"
}

// stopSharedEverything stops the shared server-everything, if a test
// started it.
func stopSharedEverything() {
	s := &sharedEverything
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		s.p.stop()
	}
}
