package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// An HTTP upstream that offers 2026-07-28 alone gets a 2026-07-28
// session (before, it was sent initialize, which it refuses), and its
// requests carry the standard headers it checks against their bodies:
// Mcp-Method, Mcp-Name, and the Mcp-Param-* header of each argument its
// tool's definition marks x-mcp-header (mcp-go's server refuses a call
// whose headers are missing or disagree). One that offers an older version
// too is spoken to in that (see offersLegacy).
func TestHTTPUpstreamOn20260728(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("modern", "1")
	tool := mcp.NewToolWithRawSchema("where", "Says the region it was called for",
		json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer"}}}`))
	srv.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("region " + req.GetString("region", "")), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions("2026-07-28")))
	t.Cleanup(ts.Close)

	_, s := startHTTP(t, httpConfig(t, ts.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.Status().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol version %q, want 2026-07-28", v)
	}
	res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"where","arguments":{"n":1,"region":"eu-west-1"}}`), 10*time.Second)
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
	t.Parallel()
	srv := mcpserver.NewMCPServer("both", "1")
	srv.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	_, s := startHTTP(t, httpConfig(t, ts.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.Status().ProtocolVersion; v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("protocol version %q, want %s", v, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
}

// notificationStatus serves a POSTed notification through next and keeps
// the status next answered with, and the body and protocol header, of
// each.
type notificationStatus struct {
	next     http.Handler
	notified chan notificationSeen
}

type notificationSeen struct {
	status int
	header string
	body   []byte
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (n *notificationStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		n.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if jsonrpc.Field(body, "method") == nil || jsonrpc.Field(body, "id") != nil {
		n.next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	// The conformance suite's 2026-07-28 server also wants the client's
	// capabilities in every message's _meta; mcp-go's wants the version.
	if jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(body, "params"), "_meta"), mcp.MetaKeyClientCapabilities) == nil {
		http.Error(sw, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params: missing _meta keys"}}`, http.StatusBadRequest)
	} else {
		n.next.ServeHTTP(sw, r)
	}
	n.notified <- notificationSeen{status: sw.status, header: r.Header.Get(mcp.HeaderProtocolVersion), body: body}
}

// A call to a 2026-07-28 HTTP upstream that the hub gives up on is
// cancelled with a notifications/cancelled the server takes (202): it
// carries the _meta of that era (version, capabilities, who sent it),
// which mcp-go's server and the conformance suite's check on every POST,
// notifications included; before, it went bare and was refused 400. The
// connection goes on: the next call succeeds. Other notifications of the
// hub's carry that _meta too.
func TestHTTPUpstreamOn20260728TakesTheHubsCancel(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("modern", "1")
	started := make(chan struct{}, 1)
	srv.AddTool(mcp.NewTool("slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(mcp.NewTool("quick"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quick"), nil
	})
	seen := &notificationStatus{next: mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions("2026-07-28")), notified: make(chan notificationSeen, 4)}
	ts := httptest.NewServer(seen)
	t.Cleanup(ts.Close)
	m, s := startHTTP(t, httpConfig(t, ts.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.Status().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol version %q, want 2026-07-28", v)
	}

	ctx, cancel := context.WithCancel(t.Context())
	failed := make(chan error, 1)
	go func() {
		_, err := s.Request(ctx, nil, "tools/call", json.RawMessage(`{"name":"slow"}`), time.Minute)
		failed <- err
	}()
	select {
	case <-started:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the slow call never started")
	}
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call: %v", err)
	}
	taken := func(method string) {
		t.Helper()
		var c notificationSeen
		select {
		case c = <-seen.notified:
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("no %s reached the server", method)
		}
		meta := jsonrpc.Field(jsonrpc.Field(c.body, "params"), "_meta")
		if c.status != http.StatusAccepted || c.header != "2026-07-28" || string(jsonrpc.Field(c.body, "method")) != `"`+method+`"` ||
			string(jsonrpc.Field(meta, mcp.MetaKeyProtocolVersion)) != `"2026-07-28"` || jsonrpc.Field(meta, mcp.MetaKeyClientInfo) == nil {
			t.Errorf("%s was answered %d (header %q): %s", method, c.status, c.header, c.body)
		}
	}
	taken("notifications/cancelled")
	m.Notify("notifications/roots/list_changed", nil)
	taken("notifications/roots/list_changed")
	res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"quick"}`), 10*time.Second)
	if err != nil || !strings.Contains(string(res), "quick") {
		t.Errorf("the next call: %s, %v", res, err)
	}
}
