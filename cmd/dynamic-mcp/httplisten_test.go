package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve --http on a port that is taken says so before it starts any
// upstream: no server is spawned only to be killed mid-handshake.
func TestServeHTTPPortInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	path := filepath.Join(dir, "c.yaml")
	src := fmt.Sprintf("groups:\n  s:\n    description: x\n    command: /bin/sh\n    args: [\"-c\", \"touch %s; exec %s\"]\n", marker, fakeBin)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCommand(t, "", "serve", "-c", path, "--http", "127.0.0.1:"+port, "--insecure-no-auth")
	want := "dynamic-mcp: port " + port + " is in use (another dynamic-mcp serve --http? see dynamic-mcp status, or pick another --http address)\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant it to end %q", code, stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("an upstream was started before the port was found taken")
	}
}
