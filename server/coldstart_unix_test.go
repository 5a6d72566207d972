//go:build unix

package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A hub answers the handshake of a client it shows flat mode only once
// that client's first tools/list could be answered without waiting, so
// that the list, sent right after (Codex lists once, and starts its turn
// without a server whose list is pending), is answered at once: once the
// tools its upstream listed the last time are read (last), or, for an
// upstream never run before (never), once it listed its tools, and no
// later than startup_wait from the hub's start (stuck: the upstream never
// lists). The mode is the client's where mode: auto or a clients: rule
// decides it, known only from the clientInfo of its initialize: a client
// shown dynamic mode is answered at once. The cache of the last run here
// is a FIFO that the test fills, and the gate of a never-run upstream one
// the test opens, only once the client has asked for the handshake (or,
// for a client that must not wait, has been answered); a ping sent after
// the initialize is answered first, while the handshake waits.
func TestColdStartHandshakeAwaitsLastTools(t *testing.T) {
	t.Parallel()
	const codex = `{"name":"codex-mcp-client","title":"Codex","version":"0.169.0"}`
	for _, tc := range []struct {
		name, config string // config: the top of the config, in place of mode: flat
		client       string // clientInfo, as the client sends it
		view         string // the key of the view the client sees (see clients.ViewKey)
		run          string // last: the upstream ran before; never: it did not; stuck: nor does it list
		waits        bool   // its handshake waits for the upstream's tools
		first        string // a tool its first tools/list shows
	}{
		{"flat", "mode: flat\n", `{"name":"t","version":"1"}`, "", "last", true, "f__echo"},
		{"auto claude-code", "mode: auto\n", `{"name":"claude-code","version":"2.1.332"}`, "#flat", "last", true, "f__echo"},
		{"rule codex flat", "mode: dynamic\nclients:\n  - {match: \"codex*\", mode: flat}\n", codex, "#flat", "last", true, "f__echo"},
		{"rule codex flat profile", "mode: dynamic\nprofiles:\n  coding: {groups: [f], mode: flat}\nclients:\n  - {match: \"codex*\", profile: coding}\n", codex, "coding", "last", true, "f__echo"},
		{"auto codex", "mode: auto\n", codex, "", "last", false, "get_dynamic_tools"},
		{"never run", "mode: flat\n", codex, "", "never", true, "f__echo"},
		{"never run rule codex flat", "mode: dynamic\nclients:\n  - {match: \"codex*\", mode: flat}\n", codex, "#flat", "never", true, "f__echo"},
		{"never run auto codex", "mode: auto\n", codex, "", "never", false, "get_dynamic_tools"},
		{"never lists", "mode: flat\n", codex, "", "stuck", true, "ready__echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			wait := coldWait
			var release func() // lets the upstream's tools be known
			switch tc.run {
			case "last":
				release = lastToolsFIFO(t, dir, gate)
			case "never":
				release = func() { openGate(t, gate) }
			case "stuck":
				wait, release = time.Second, func() {}
			}
			yaml := coldYAML(dir, gate, wait)
			if tc.run == "stuck" {
				// A second server, ready at once, that the list shows.
				yaml += fmt.Sprintf("  ready:\n    description: fake\n    command: %q\n", fakeBin)
			}
			h, mgr, _ := startHub(t, tc.config+strings.TrimPrefix(yaml, "mode: flat\n"), true)
			release = sync.OnceFunc(release)
			t.Cleanup(func() { go release() }) // so that a failed test's hub can close
			if tc.run == "stuck" {
				// The list answered at startup_wait shows what was known
				// by then: ready's tools, once it listed them (on a busy
				// machine, maybe later than startup_wait).
				await.For(t, 10*time.Second, "the server ready", func() bool { _, ok := h.snapshot().view.FlatRoutes[tc.first]; return ok })
			}
			c := servePipes(t, h, StdioOptions{})
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":%s}}`, tc.client))
			if tc.waits && tc.run != "stuck" { // stuck: the hub may have started startup_wait ago
				c.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
				if first := c.readUntil(func(line string) bool { return !strings.Contains(line, `"method"`) }); !strings.Contains(first, `"id":9,`) {
					t.Fatalf("the handshake was answered before the upstream's tools were known: %.300s", first)
				}
				go release()
			}
			c.answer("0")
			v := h.snapshot().viewOf(tc.view)
			switch _, listed := v.FlatRoutes["f__echo"]; {
			case !tc.waits:
				if !h.snapshot().viewOf("#flat").Unknown {
					t.Errorf("the handshake of a client shown dynamic mode was answered only once the upstream's tools were known, or it had failed")
				}
				go release()
			case tc.run == "stuck":
				if since := time.Since(h.started); since < wait || listed {
					t.Errorf("the handshake was answered %v after the hub's start (startup_wait %v), the upstream's tools listed %v", since, wait, listed)
				}
			case v.Unknown || !listed:
				t.Errorf("the handshake was answered before the upstream's tools were known (unknown %v, routes %v)", v.Unknown, v.FlatRoutes)
			}
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if list := c.answer("1"); !strings.Contains(list, `"name":"`+tc.first+`"`) || tc.run == "stuck" && strings.Contains(list, `"name":"f__`) {
				t.Errorf("first tools/list: %.400s", list)
			}
			if st := mgr.Servers()[0].Status().State; tc.run != "never" && st != upstream.StateStarting {
				t.Errorf("the upstream is %s before its gate opened", st)
			}
		})
	}
}

// lastToolsFIFO leaves in dir the state of a hub that ran f (warmUp), its
// cache of f's last tools a FIFO: a hub's read of it waits for fill.
func lastToolsFIFO(t *testing.T, dir, gate string) (fill func()) {
	t.Helper()
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
	return func() {
		// The open waits for the hub's, which reads the cache.
		_ = os.WriteFile(files[0], rec, 0o600)
	}
}
