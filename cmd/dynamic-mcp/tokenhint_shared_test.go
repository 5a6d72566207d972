//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

var printedUI = regexp.MustCompile(`the inspector is at (http://127\.0\.0\.1:\d+/ui/)\n  token for this run: (\S+)\n`)

// The shared hub's inspector, asked for by a client entry's --ui: the
// token went to that client's MCP log, so the login page says to run
// `dynamic-mcp ui`, which prints the URL and the token, the ones the
// bridge printed. A hub serving none is told to by `ui --addr`.
func TestSharedHubUITokenHintAndUICommand(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	s.bridge(t, "alpha")
	out, err := uiCommand(t, s.env, "-c", s.path)
	if err == nil || !strings.Contains(out, "serves no inspector") || !strings.Contains(out, "dynamic-mcp ui -c "+s.path+" --addr 7777") {
		t.Errorf("ui with no inspector: %v\n%s", err, out)
	}
	out, err = uiCommand(t, s.env, "-c", s.path, "--addr", "127.0.0.1:0")
	m := printedUI.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("ui --addr: %v\n%s", err, out)
	}
	if code := uiStatus(t, strings.TrimSuffix(m[1], "/ui/"), m[2]); code != http.StatusOK {
		t.Errorf("the inspector with the token ui printed: %d", code)
	}
	// ui again prints the same; the login page says to run it.
	page, token := m[1], m[2]
	out, err = uiCommand(t, s.env, "-c", s.path)
	if err != nil || !strings.Contains(out, page) || !strings.Contains(out, token) {
		t.Errorf("ui: %v\n%s\nwant %s %s", err, out, page, token)
	}
	hint := tokenHint(t, page)
	if !strings.Contains(hint, "dynamic-mcp ui -c "+s.path) || strings.Contains(hint, token) {
		t.Errorf("the login page says: %q", hint)
	}
}

// A client entry's --ui: the bridge prints the token into the client's
// MCP log, and `dynamic-mcp ui` prints the same URL and token.
func TestSharedHubUICommandPrintsTheBridgesToken(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	_, page, token := s.uiBridge(t, "alpha", "127.0.0.1:0")
	out, err := uiCommand(t, s.env, "-c", s.path)
	if m := printedUI.FindStringSubmatch(out); err != nil || m == nil || m[1] != page || m[2] != token {
		t.Errorf("ui: %v\n%s\nwant %s %s", err, out, page, token)
	}
}

// The reference filesystem server asks for roots/list as it starts, when
// the shared hub has no client yet: the hub answers for the client, as it
// must, and the inspector shows those rows as no_client, not as red
// errors that a newcomer takes for failures.
func TestInspectorRootsListAtStartIsNoFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s, "+nodeWaits+" }\ngroups:\n  files:\n    description: files\n    command: node\n    args: %s\n",
		yamlList(referenceServer(t, "server-filesystem", root)[1:])))
	_, page, token := s.uiBridge(t, "alpha", "127.0.0.1:0")
	await.Costly(t, time.Minute, "the filesystem server", func() bool {
		st := s.status(t)
		return len(st.Upstreams) == 1 && st.Upstreams[0].State == "ready"
	})
	var statuses []string
	await.Costly(t, 30*time.Second, "a roots/list row", func() bool {
		req, _ := http.NewRequest(http.MethodGet, page+"api/export", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		statuses = nil
		for line := range strings.Lines(string(b)) {
			var r struct{ Method, Status string }
			if json.Unmarshal([]byte(line), &r) == nil && r.Method == "roots/list" {
				statuses = append(statuses, r.Status)
			}
		}
		return len(statuses) > 0
	})
	for _, st := range statuses {
		if st != "no_client" {
			t.Errorf("roots/list rows: %v, want no_client", statuses)
			break
		}
	}
}
