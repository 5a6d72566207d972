package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// pprofEnvVar, set to a listen address (127.0.0.1:6061), makes a hub this
// test binary runs (hubEnvVar) serve net/http/pprof there, so that a
// benchmark's hub can be profiled as it runs:
//
//	DYNAMIC_MCP_TEST_PPROF=127.0.0.1:6061 go test -run '^$' -bench ToolCallLatency/http ...
//	go tool pprof -seconds 20 http://127.0.0.1:6061/debug/pprof/profile
//
// It is the hub binary's only difference from a build of main: none
// without the variable.
const pprofEnvVar = "DYNAMIC_MCP_TEST_PPROF"

// servePprof serves pprof at the address pprofEnvVar names, if any, for
// as long as the process lives (it ends with the hub).
func servePprof() {
	addr := os.Getenv(pprofEnvVar)
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pprofEnvVar, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go http.Serve(ln, mux)
}
