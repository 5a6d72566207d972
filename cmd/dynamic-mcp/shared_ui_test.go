//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// uiBridge starts `serve -c --ui addr` as a client's entry with --ui
// starts it, initializes as name, and returns the inspector's URL and
// token the bridge printed to its stderr.
func (s *sharedSetup) uiBridge(t *testing.T, name, addr string) (c *client, page, token string) {
	t.Helper()
	c = startProcess(t, s.env, raceHubBin, "serve", "-c", s.path, "--log-level", "debug", "--ui", addr)
	if _, rpcErr := c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "1.0"}}); rpcErr != nil {
		t.Fatalf("initialize %s: %v", name, rpcErr.Message)
	}
	if err := c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{
		JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}}); err != nil {
		t.Fatal(err)
	}
	// The bridge prints before it passes the client on; its stderr is
	// copied here by a goroutine of its own.
	re := regexp.MustCompile(`the inspector is at (http://127\.0\.0\.1:\d+/ui/)\n  token for this run: (\S+)\n`)
	var m []string
	await.Costly(t, 10*time.Second, name+"'s bridge to print the inspector's URL and token", func() bool {
		m = re.FindStringSubmatch(c.stderr.String())
		return m != nil
	})
	return c, m[1], m[2]
}

// serve --ui on the shared hub: the hub serves one inspector, which lists
// every client's session and records every client's traffic; a second
// ask for the same address gets the same inspector, another address is
// refused with where the inspector is.
func TestSharedHubUIShowsEveryClient(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("mode: flat\nsettings: { shared_idle: 1s, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	alpha, page, token := s.uiBridge(t, "alpha", "0")
	beta, page2, token2 := s.uiBridge(t, "beta", "0")
	if page2 != page || token2 != token {
		t.Fatalf("the second --ui got %s %s, want the first's %s %s", page2, token2, page, token)
	}
	gamma := s.bridge(t, "gamma") // no --ui: shown all the same
	for name, c := range map[string]*client{"alpha": alpha, "beta": beta, "gamma": gamma} {
		c.waitFlatTools(fakeTools)
		res := c.call("tools/call", map[string]any{"name": "one__echo", "arguments": map[string]any{"text": "from " + name}})
		if text, _ := toolText(t, res); !strings.Contains(text, "from "+name) {
			t.Fatalf("%s got %s", name, text)
		}
	}

	get := func(url string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
		}
		return b
	}
	var clients []struct{ ID, Name string }
	mustUnmarshal(t, get(page+"api/clients"), &clients)
	label := map[string]string{} // session label -> client name
	for _, c := range clients {
		label[c.ID] = c.Name
	}
	if len(clients) != 3 || len(label) != 3 {
		t.Fatalf("the inspector lists %+v, want alpha, beta and gamma's sessions", clients)
	}
	// Each client's call is a row of its own session.
	called := map[string]string{} // client name -> the text its call carried
	await.Costly(t, 10*time.Second, "each client's call in the inspector", func() bool {
		sc := bufio.NewScanner(strings.NewReader(string(get(page + "api/export"))))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct {
				Session, Method, Target, Status string
				Params                          json.RawMessage
			}
			mustUnmarshal(t, sc.Bytes(), &r)
			if r.Method == "tools/call" && r.Status == "ok" {
				called[label[r.Session]] = string(r.Params)
			}
		}
		return len(called) == 3
	})
	for name, params := range called {
		if !strings.Contains(params, "from "+name) {
			t.Errorf("the row of %s's session carries %s", name, params)
		}
	}

	// Another address: refused, saying where the inspector is.
	paths, err := local.PathsFor(s.cfg.Path, s.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := askUI(t.Context(), paths, "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), page) {
		t.Errorf("--ui at another address: %v, want a refusal naming %s", err, page)
	}
}
