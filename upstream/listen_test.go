package upstream

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// On a 2026-07-28 session the hub opens subscriptions/listen for the lists
// the server declares listChanged of, with the session's _meta; closing
// the connection ends the listen's goroutine (close waits for it, and
// TestMain finds no goroutine left). A session of an older version opens
// none.
func TestListenOnModernSession(t *testing.T) {
	c, lines, w := peerConn(t)
	done := make(chan error, 1)
	go func() { done <- c.handshake(t.Context(), mcp.ClientCapabilities{}) }()
	msg := expect(t, lines, "server/discover")
	io.WriteString(w, string(jsonrpc.EncodeResult(jsonrpc.Field(msg, "id"),
		json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"listChanged":true}}}`)))+"\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.startListen(t.Context())
	msg = expect(t, lines, "subscriptions/listen")
	params := string(jsonrpc.Field(msg, "params"))
	if !strings.HasPrefix(params, `{"notifications":{"toolsListChanged":true,"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
		t.Errorf("listen params: %s", params)
	}
	c.close()
	select {
	case <-c.listenDone:
	default:
		t.Error("close returned before the listen ended")
	}

	legacy, _, _ := peerConn(t)
	legacy.init = &mcp.InitializeResult{Capabilities: mcp.ServerCapabilities{Tools: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true}}}
	legacy.startListen(t.Context())
	if legacy.listenDone != nil {
		t.Error("a listen was opened on a session before 2026-07-28")
	}
}
