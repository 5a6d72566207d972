//go:build unix

package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A flat hub answers a client's handshake only once the tools its
// upstream listed the last time are read, so that the client's first
// tools/list, sent right after (Codex lists once, and starts its turn
// without a server whose list is pending), is answered from them at
// once, while the upstream is still starting. The cache here is a FIFO
// that the test fills only once the client has asked for the handshake.
func TestColdStartHandshakeAwaitsLastTools(t *testing.T) {
	t.Parallel()
	dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	warmUp(t, dir, gate, false)
	files, _ := filepath.Glob(filepath.Join(dir, "tools", "*.json"))
	if len(files) != 1 {
		t.Fatalf("the cached tools of the last run: %v", files)
	}
	rec, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(files[0], 0o600); err != nil {
		t.Fatal(err)
	}
	h, mgr, _ := coldHub(t, dir, gate, coldWait)
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	go func() {
		// The open waits for the hub's, which reads the cache.
		_ = os.WriteFile(files[0], rec, 0o600)
	}()
	c.answer("0")
	v := h.snapshot().view
	if _, listed := v.FlatRoutes["f__echo"]; v.Reading || !listed {
		t.Errorf("the handshake was answered before the tools of the last run were read (reading %v, routes %v)", v.Reading, v.FlatRoutes)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if list := c.answer("1"); !strings.Contains(list, `"name":"f__echo"`) {
		t.Errorf("first tools/list: %.400s", list)
	}
	if st := mgr.Servers()[0].Status().State; st != upstream.StateStarting {
		t.Errorf("the upstream is %s before its gate opened", st)
	}
}
