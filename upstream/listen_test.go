package upstream

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// On a 2026-07-28 session the hub opens subscriptions/listen for the lists
// the server declares listChanged of, with the session's _meta, and
// replaces it when a resource is subscribed to or unsubscribed from;
// closing the connection ends the listen's goroutine (close waits for it,
// and TestMain finds no goroutine left). A session of an older version
// opens none.
func TestListenOnModernSession(t *testing.T) {
	t.Parallel()
	c, lines, w := peerConn(t)
	done := make(chan error, 1)
	go func() { done <- c.handshake(t.Context(), mcp.ClientCapabilities{}) }()
	msg := expect(t, lines, "server/discover")
	answerPeer(w, msg, `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"listChanged":true}}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.startListen(t.Context())
	first := expect(t, lines, "subscriptions/listen")
	params := string(jsonrpc.Field(first, "params"))
	if !strings.HasPrefix(params, `{"notifications":{"toolsListChanged":true,"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
		t.Errorf("listen params: %s", params)
	}

	// resources/subscribe, gone in 2026-07-28, replaces the listen with
	// one that names the URI too; resources/unsubscribe takes it out.
	for _, step := range []struct{ method, want string }{
		{"resources/subscribe", `{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["mem://a"]},`},
		{"resources/unsubscribe", `{"notifications":{"toolsListChanged":true,"resourcesListChanged":true},`},
	} {
		go func() {
			_, err := c.request(t.Context(), step.method, map[string]string{"uri": "mem://a"})
			done <- err
		}()
		cancelled := expect(t, lines, "notifications/cancelled")
		if got := string(jsonrpc.Field(jsonrpc.Field(cancelled, "params"), "requestId")); got != string(jsonrpc.Field(first, "id")) {
			t.Errorf("%s cancelled %s, not the open listen %s", step.method, got, jsonrpc.Field(first, "id"))
		}
		first = expect(t, lines, "subscriptions/listen")
		if params := string(jsonrpc.Field(first, "params")); !strings.HasPrefix(params, step.want) {
			t.Errorf("after %s the listen's params are %s", step.method, params)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: %v", step.method, err)
		}
	}

	c.close()
	c.listen.mu.Lock()
	if c.listen.done != nil || !c.listen.closed {
		t.Error("close returned before the listen ended")
	}
	c.listen.mu.Unlock()

	legacy, _, _ := peerConn(t)
	legacy.init = &mcp.InitializeResult{Capabilities: mcp.ServerCapabilities{Tools: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true}}}
	legacy.startListen(t.Context())
	if legacy.listen != nil {
		t.Error("a listen was opened on a session before 2026-07-28")
	}
}
