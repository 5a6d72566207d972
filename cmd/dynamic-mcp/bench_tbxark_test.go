package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// tbxarkEnvVar names a TBXark/mcp-proxy binary for the benchmark's http line
// to measure beside the hub and the in-repo stand-in (testdata/mcpgoproxy),
// to check once in a while that the stand-in is as fast as the real one.
// The binary is built outside the repo from its own source; without the
// variable the http line measures the hub and the stand-in only.
const tbxarkEnvVar = "DYNAMIC_MCP_BENCH_TBXARK"

// startTBXark starts the TBXark/mcp-proxy binary bin on the fake, as a
// stateless Streamable HTTP server on loopback, and returns the URL of its
// route for the fake, /f/, once the route is served, and its meter.
// TBXark binds the port itself and logs only the address it was given, so
// it is given port 0, and the port it bound is read from the kernel's
// table of its listening sockets (listeningPort): no port is picked free
// for another process to take first.
func startTBXark(b *testing.B, bin string) (string, procMeter) {
	b.Helper()
	if runtime.GOOS != "linux" {
		b.Skip("the port TBXark/mcp-proxy binds is read from /proc")
	}
	stderr, meter := startTBXarkAt(b, bin, "127.0.0.1:0")
	// The route is added once the upstream is initialized and its
	// lists read; the server listens before that and answers 404
	// until then.
	port := 0
	await.Costly(b, 30*time.Second, "TBXark/mcp-proxy to listen and serve /f/", func() bool {
		if port == 0 {
			port = listeningPort(meter.pid)
		}
		return port != 0 && strings.Contains(stderr.String(), "<f> Handling requests at /f/")
	})
	return fmt.Sprintf("http://127.0.0.1:%d/f/", port), meter
}

// listeningPort is the port of a TCP socket of process pid in the listen
// state, read from /proc, or 0 while it has none.
func listeningPort(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	for _, line := range strings.Split(string(table), "\n") {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: TCP_LISTEN
			continue
		}
		_, hexPort, _ := strings.Cut(f[1], ":")
		if port, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			return int(port)
		}
	}
	return 0
}

// startTBXarkAt starts TBXark/mcp-proxy (bin) listening on addr, and
// returns its stderr and its meter.
func startTBXarkAt(b *testing.B, bin, addr string) (*lockedBuffer, procMeter) {
	b.Helper()
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	cfg := map[string]any{
		"mcpProxy": map[string]any{
			// Of the base URL a Streamable HTTP server uses the path only.
			"baseURL": "http://127.0.0.1", "addr": addr, "name": "p", "version": "1",
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
	return startBenchProcess(b, cmd, "TBXark/mcp-proxy"), procMeter{cmd.Process.Pid}
}
