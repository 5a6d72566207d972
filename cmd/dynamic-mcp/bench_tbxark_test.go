package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// tbxarkEnvVar names a TBXark/mcp-proxy binary for the benchmark's http line
// to measure beside the hub and the in-repo stand-in (testdata/mcpgoproxy),
// to check once in a while that the stand-in is as fast as the real one.
// The binary is built outside the repo from its own source; without the
// variable the http line measures the hub and the stand-in only.
const tbxarkEnvVar = "DYNAMIC_MCP_BENCH_TBXARK"

// startTBXark starts the TBXark/mcp-proxy binary bin on the fake, as a
// stateless Streamable HTTP server on a free loopback port, and returns the
// URL of its route for the fake, /f/, once the route is served, and its
// meter. The port is picked free and bound by TBXark, another process:
// when anyone took it in between, TBXark says so, and it is started again
// on another.
func startTBXark(b *testing.B, bin string) (string, procMeter) {
	b.Helper()
	for attempt := 1; ; attempt++ {
		addr, stderr, meter := startTBXarkAt(b, bin)
		inUse := false
		// The route is added once the upstream is initialized and its
		// lists read; the server listens before that and answers 404
		// until then.
		waitFor(b, 30*time.Second, "TBXark/mcp-proxy to serve /f/", func() bool {
			inUse = strings.Contains(stderr.String(), "address already in use")
			return inUse || strings.Contains(stderr.String(), "<f> Handling requests at /f/")
		})
		if !inUse {
			return "http://" + addr + "/f/", meter
		}
		if attempt == 3 {
			b.Fatalf("TBXark/mcp-proxy found its port taken 3 times; last %s: %s", addr, stderr)
		}
	}
}

// startTBXarkAt starts TBXark/mcp-proxy (bin) on a port found free, and
// returns its address, its stderr and its meter.
func startTBXarkAt(b *testing.B, bin string) (string, *lockedBuffer, procMeter) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	cfg := map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "p", "version": "1",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false},
		},
		"mcpServers": map[string]server{
			// The fake is this test binary; the variable makes it the fake.
			"f": {Command: fakeBin, Args: []string{}, Env: map[string]string{fakeupstream.EnvVar: "1"}},
		},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "tbxark.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	// -expand-env=false: the config is literal, paths included.
	cmd := exec.Command(bin, "-config", path, "-expand-env=false")
	return addr, startBenchProcess(b, cmd, "TBXark/mcp-proxy"), procMeter{cmd.Process.Pid}
}
