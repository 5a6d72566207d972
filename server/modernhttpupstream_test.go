package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A tool of an HTTP upstream on 2026-07-28 whose definition marks an
// argument x-mcp-header is called through the hub under the name the hub
// gave it (prefixed), by a client of either era: the upstream (mcp-go's
// server, which refuses a call whose Mcp-Name or Mcp-Param-* header
// disagrees with its body) gets the headers of its own name and
// definition, and answers.
func TestModernHTTPUpstreamHeadersThroughRenaming(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("modern", "1")
	tool := mcp.NewToolWithRawSchema("where", "Says the region it was called for",
		json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`))
	srv.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("region " + req.GetString("region", "")), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions("2026-07-28")))
	t.Cleanup(ts.Close)
	// A hub serves stdio once: one hub for each client.
	hub := func(t *testing.T) *Hub {
		t.Helper()
		cfg, err := config.Parse("test.yaml", strings.NewReader(fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {call_timeout: 5s}\ngroups:\n  geo:\n    description: remote\n    url: %q\n",
			t.TempDir(), ts.URL+"/mcp")))
		if err != nil {
			t.Fatal(err)
		}
		mgr := upstream.New(cfg, testLogger())
		h, err := New(cfg, mgr, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		h.Run()
		mgr.Start(context.Background())
		t.Cleanup(func() { h.Close(); mgr.Close() })
		await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["geo__where"]; return ok })
		if v := mgr.Servers()[0].Status().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("the upstream speaks %q, want 2026-07-28", v)
		}
		return h
	}
	t.Run("2026-07-28", func(t *testing.T) {
		c := servePipes(t, hub(t), StdioOptions{})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"geo__where","arguments":{"region":"eu-west-1"},` + metaWithCaps(`{}`) + `}}`)
		if got := reply(c, "1"); !strings.Contains(got, "region eu-west-1") {
			t.Errorf("2026-07-28 client: %s", got)
		}
	})
	t.Run("2025-06-18", func(t *testing.T) {
		c := servePipes(t, hub(t), StdioOptions{})
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"geo__where","arguments":{"region":"us-east-2"}}}`)
		if got := reply(c, "2"); !strings.Contains(got, "region us-east-2") {
			t.Errorf("2025-06-18 client: %s", got)
		}
	})
}
