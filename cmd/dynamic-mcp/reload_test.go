package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

func TestReloadRestartsOnlyWhatChangedAndKeepsServingOnError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(cfg string) {
		t.Helper()
		// Write beside and rename, as editors do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`
mode: flat
groups:
  keep: { description: unchanged, command: %q }
  change: { description: changes, command: %q }
  drop: { description: removed, command: %q }
`, fakeBin, fakeBin, fakeBin))
	// The race build: a reload restarts upstreams while the session's
	// requests run, on the watcher's goroutine or on SIGHUP's.
	c := startProcess(t, nil, raceHubBin, "serve", "-c", path, "--log-level", "debug")
	c.initialize("2025-06-18")
	c.waitFlatTools(3 * fakeTools)
	keepPID, _ := c.callText("keep__pid", nil)
	changePID, _ := c.callText("change__pid", nil)
	dropPID, _ := c.callText("drop__pid", nil)

	before := c.countNotes("notifications/tools/list_changed")
	write(fmt.Sprintf(`
mode: flat
groups:
  keep: { description: unchanged, command: %q }
  change: { description: changed, command: %q, args: ["-name", "changed"] }
  added: { description: new, command: %q }
`, fakeBin, fakeBin, fakeBin))
	// The client listed the old tools: it is told they changed.
	await.Costly(t, 10*time.Second, "tools/list_changed after the reload", func() bool {
		return c.countNotes("notifications/tools/list_changed") > before
	})
	await.Costly(t, 10*time.Second, "the reloaded tool list", func() bool {
		list := string(c.call("tools/list", nil))
		return strings.Contains(list, "added__echo") && !strings.Contains(list, "drop__echo")
	})
	if pid, _ := c.callText("keep__pid", nil); pid != keepPID {
		t.Errorf("unchanged server was restarted (pid %s, was %s)", pid, keepPID)
	}
	await.Costly(t, 10*time.Second, "changed server restarted", func() bool {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "change__pid", "arguments": map[string]any{}})
		if rpcErr != nil {
			return false
		}
		pid, isErr := toolText(t, res)
		return !isErr && pid != changePID
	})
	await.Costly(t, 15*time.Second, "removed server stopped", func() bool {
		var pid int
		fmt.Sscan(dropPID, &pid)
		return processGone(pid)
	})

	// A broken config is logged and the old one keeps serving.
	write("groups:\n  broken: { command: x }\n")
	await.Costly(t, 10*time.Second, "the reload error in the log", func() bool {
		return strings.Contains(c.stderr.String(), "config reload failed, still serving the previous config")
	})
	if text, _ := c.callText("keep__echo", map[string]any{"text": "still"}); text != "still" {
		t.Errorf("after a bad reload: %q", text)
	}

	// SIGHUP reloads at once.
	write(fmt.Sprintf("mode: flat\ngroups:\n  keep: { description: unchanged, command: %q }\n", fakeBin))
	if err := c.signalHub(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	await.Costly(t, 5*time.Second, "SIGHUP reload", func() bool {
		return strings.Contains(c.stderr.String(), `msg="config reloaded" reason=SIGHUP`)
	})
}

func (c *client) countNotes(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, note := range c.notes {
		if note.Method == method {
			n++
		}
	}
	return n
}
