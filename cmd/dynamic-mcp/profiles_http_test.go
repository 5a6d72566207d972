package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// httpClientAt is httpClient at the URL path of the hub's base.
func httpClientAt(t *testing.T, base, path string) (*client, *mcptransport.StreamableHTTP) {
	t.Helper()
	c := &client{t: t, stderr: &lockedBuffer{}, noted: make(chan struct{}, 1)}
	//lint:ignore SA1019 the tests drive the 2025-era GET stream on purpose
	tr, err := mcptransport.NewStreamableHTTP(base+path, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}), mcptransport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c.tr = tr
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.listen()
	t.Cleanup(func() { tr.Close() })
	return c, tr
}

// /mcp/p/NAME shows exactly the profile's groups, in the profile's mode;
// /mcp shows the whole config; an unknown profile is 404, and a session
// is not found at another profile's URL.
func TestHTTPProfileURLs(t *testing.T) {
	t.Parallel() // its hub is its own
	base, _ := startHTTPHub(t, profilesConfig())

	flat, flatTr := httpClientAt(t, base, "/mcp/p/flat")
	flat.initialize("2025-11-25")
	var names []string
	await.Costly(t, 30*time.Second, "a and c listed", func() bool {
		names = toolNames(t, flat.call("tools/list", nil))
		return slices.Contains(names, "a__a_echo") && slices.Contains(names, "c__c_echo")
	})
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "c__") {
			t.Errorf("/mcp/p/flat lists %q", n)
		}
	}
	// Answered as a tool that does not exist, the hint naming the
	// profile's tools alone.
	const hidden = "Tool not found: b__b_echo (did you mean a__a_echo or c__c_echo?)"
	res, rpcErr := flat.request("tools/call", map[string]any{"name": "b__b_echo", "arguments": map[string]any{"text": "hi"}})
	if rpcErr == nil {
		if text, isErr := toolText(t, res); !isErr || text != hidden {
			t.Errorf("hidden tool answered %q (error %v)", text, isErr)
		}
	} else if rpcErr.Message != hidden {
		t.Errorf("hidden tool: %d %s", rpcErr.Code, rpcErr.Message)
	}

	dyn, _ := httpClientAt(t, base, "/mcp/p/dyn")
	dyn.initialize("2025-11-25")
	dyn.waitGroupsReady("a", "c")
	whole, _ := httpClientAt(t, base, "/mcp")
	whole.initialize("2025-11-25")
	whole.waitGroupsReady("a", "b", "c")

	post := func(path, session string) int {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/mcp/p/nope", ""); code != http.StatusNotFound {
		t.Errorf("unknown profile: %d, want 404", code)
	}
	for _, path := range []string{"/mcp", "/mcp/p/dyn"} {
		if code := post(path, flatTr.GetSessionId()); code != http.StatusNotFound {
			t.Errorf("a session of /mcp/p/flat at %s: %d, want 404", path, code)
		}
	}
	if code := post("/mcp/p/flat", flatTr.GetSessionId()); code != http.StatusOK {
		t.Errorf("the session at its own URL: %d, want 200", code)
	}
}
