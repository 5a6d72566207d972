//go:build unix

package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A hub answers the handshake of a client it shows flat mode only once
// the tools its upstream listed the last time are read, so that the
// client's first tools/list, sent right after (Codex lists once, and
// starts its turn without a server whose list is pending), is answered
// from them at once, while the upstream is still starting. The mode is
// the client's where mode: auto or a clients: rule decides it, known only
// from the clientInfo of its initialize: a client shown dynamic mode is
// answered at once. The cache here is a FIFO that the test fills only
// once the client has asked for the handshake (or, for a client that must
// not wait, has been answered).
func TestColdStartHandshakeAwaitsLastTools(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string // config: the top of the config, in place of mode: flat
		client       string // clientInfo, as the client sends it
		view         string // the key of the view the client sees (see clients.ViewKey)
		waits        bool   // its handshake waits for the tools of the last run
		first        string // a tool its first tools/list shows
	}{
		{"flat", "mode: flat\n", `{"name":"t","version":"1"}`, "", true, "f__echo"},
		{"auto claude-code", "mode: auto\n", `{"name":"claude-code","version":"2.1.332"}`, "#flat", true, "f__echo"},
		{"rule codex flat", "mode: dynamic\nclients:\n  - {match: \"codex*\", mode: flat}\n", `{"name":"codex-mcp-client","title":"Codex","version":"0.169.0"}`, "#flat", true, "f__echo"},
		{"rule codex flat profile", "mode: dynamic\nprofiles:\n  coding: {groups: [f], mode: flat}\nclients:\n  - {match: \"codex*\", profile: coding}\n", `{"name":"codex-mcp-client","title":"Codex","version":"0.169.0"}`, "coding", true, "f__echo"},
		{"auto codex", "mode: auto\n", `{"name":"codex-mcp-client","title":"Codex","version":"0.169.0"}`, "", false, "get_dynamic_tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			fill := func() {
				// The open waits for the hub's, which reads the cache.
				_ = os.WriteFile(files[0], rec, 0o600)
			}
			yaml := coldYAML(dir, gate, coldWait)
			h, mgr, _ := startHub(t, tc.config+strings.TrimPrefix(yaml, "mode: flat\n"), true)
			c := servePipes(t, h, StdioOptions{})
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":%s}}`, tc.client))
			if tc.waits {
				go fill()
			}
			c.answer("0")
			if v := h.snapshot().viewOf(tc.view); tc.waits {
				if _, listed := v.FlatRoutes["f__echo"]; v.Reading || !listed {
					t.Errorf("the handshake was answered before the tools of the last run were read (reading %v, routes %v)", v.Reading, v.FlatRoutes)
				}
			} else {
				if !h.snapshot().viewOf("#flat").Reading {
					t.Errorf("the handshake of a client shown dynamic mode was answered only once the tools of the last run were read, or their server had failed")
				}
				go fill()
			}
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if list := c.answer("1"); !strings.Contains(list, `"name":"`+tc.first+`"`) {
				t.Errorf("first tools/list: %.400s", list)
			}
			if st := mgr.Servers()[0].Status().State; st != upstream.StateStarting {
				t.Errorf("the upstream is %s before its gate opened", st)
			}
		})
	}
}
