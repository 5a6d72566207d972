package upstream

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// An HTTP upstream that offers 2026-07-28 alone gets a 2026-07-28
// session (before, it was sent initialize, which it refuses), and its
// requests carry the standard headers it checks against their bodies:
// Mcp-Method, Mcp-Name, and the Mcp-Param-* header of each argument its
// tool's definition marks x-mcp-header (mcp-go's server refuses a call
// whose headers are missing or disagree). One that offers an older version
// too is spoken to in that (see offersLegacy).
func TestHTTPUpstreamOn20260728(t *testing.T) {
	srv := mcpserver.NewMCPServer("modern", "1")
	tool := mcp.NewToolWithRawSchema("where", "Says the region it was called for",
		json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer"}}}`))
	srv.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("region " + req.GetString("region", "")), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions("2026-07-28")))
	t.Cleanup(ts.Close)

	_, s := startHTTP(t, httpConfig(t, ts.URL+"/mcp", config.TransportStreamableHTTP, ""))
	waitFor(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.Status().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol version %q, want 2026-07-28", v)
	}
	res, err := s.Request(t.Context(), "tools/call", json.RawMessage(`{"name":"where","arguments":{"n":1,"region":"eu-west-1"}}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "region eu-west-1") {
		t.Errorf("result: %s", res)
	}
}

// A remote server that offers 2025-11-25 beside 2026-07-28 is spoken to in
// 2025-11-25, where its requests during a call and its notifications
// reach the hub.
func TestHTTPUpstreamOfferingBothIsSpokenToInTheOlder(t *testing.T) {
	srv := mcpserver.NewMCPServer("both", "1")
	srv.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	_, s := startHTTP(t, httpConfig(t, ts.URL+"/mcp", config.TransportStreamableHTTP, ""))
	waitFor(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.Status().ProtocolVersion; v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("protocol version %q, want %s", v, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
}
