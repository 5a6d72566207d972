package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// answerClientRequests makes c a client that can sample, elicit and list
// roots, answering each with a recognisable value, and counts what it was
// asked.
func answerClientRequests(c *client) *atomic.Int32 {
	var asked atomic.Int32
	c.tr.SetRequestHandler(func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		asked.Add(1)
		var res any
		switch req.Method {
		case "sampling/createMessage":
			res = map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn",
				"content": map[string]any{"type": "text", "text": "sampled by the test client"}}
		case "elicitation/create":
			res = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}}
		case "roots/list":
			res = map[string]any{"roots": []any{map[string]any{"uri": "file:///test-root", "name": "test root"}}}
		default:
			return mcptransport.NewJSONRPCErrorResponse(req.ID, -32601, "not here", nil), nil
		}
		b, _ := json.Marshal(res)
		return mcptransport.NewJSONRPCResultResponse(req.ID, b), nil
	})
	return &asked
}

func (c *client) notesOf(method string) []mcp.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range c.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

func TestEverythingFlowsBackThroughTheHub(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
settings: { `+nodeWaits+` }
groups:
  ev:
    description: The reference server
    command: node
    args: %s
`, yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	asked := answerClientRequests(c)
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "clientInfo": map[string]any{"name": "t", "version": "1"},
		"capabilities": map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{"listChanged": true}}})
	c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}})

	// The hub declares sampling, elicitation and roots upstream, so the
	// tools that need them are listed.
	await.Costly(t, 20*time.Second, "the capability tools", func() bool {
		list := string(c.call("tools/list", nil))
		return strings.Contains(list, "ev__trigger-sampling-request") && strings.Contains(list, "ev__get-roots-list")
	})

	t.Run("sampling", func(t *testing.T) {
		text, isErr := c.callText("ev__trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10})
		if isErr || !strings.Contains(text, "sampled by the test client") {
			t.Errorf("sampling: %q", text)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		res := c.call("tools/call", map[string]any{"name": "ev__trigger-elicitation-request", "arguments": map[string]any{}})
		if !strings.Contains(string(res), "Ada Lovelace") {
			t.Errorf("elicitation: %s", res)
		}
	})
	t.Run("roots", func(t *testing.T) {
		text, isErr := c.callText("ev__get-roots-list", nil)
		if isErr || !strings.Contains(text, "file:///test-root") {
			t.Errorf("roots: %q", text)
		}
	})
	t.Run("progress", func(t *testing.T) {
		res := c.call("tools/call", map[string]any{"name": "ev__trigger-long-running-operation",
			"arguments": map[string]any{"duration": 0.3, "steps": 3}, "_meta": map[string]any{"progressToken": "client-token-7"}})
		if text, _ := toolText(t, res); !strings.Contains(text, "completed") {
			t.Errorf("long running operation: %q", text)
		}
		got := c.notesOf("notifications/progress")
		if len(got) < 3 {
			t.Fatalf("want 3 progress notifications, got %d", len(got))
		}
		for _, n := range got {
			if tok := n.Params.AdditionalFields["progressToken"]; tok != "client-token-7" {
				t.Errorf("progress token %v reached the client, not its own", tok)
			}
		}
	})
	t.Run("logging", func(t *testing.T) {
		c.call("logging/setLevel", map[string]any{"level": "debug"})
		c.callText("ev__toggle-simulated-logging", nil)
		defer c.callText("ev__toggle-simulated-logging", nil)
		await.Costly(t, 10*time.Second, "a log message from the upstream", func() bool {
			for _, n := range c.notesOf("notifications/message") {
				if logger, _ := n.Params.AdditionalFields["logger"].(string); strings.HasPrefix(logger, "ev") {
					return true
				}
			}
			return false
		})
	})
	t.Run("subscriptions", func(t *testing.T) {
		uri := "demo://resource/static/document/architecture.md"
		c.call("resources/subscribe", map[string]any{"uri": uri})
		c.callText("ev__toggle-subscriber-updates", nil)
		defer c.callText("ev__toggle-subscriber-updates", nil)
		await.Costly(t, 15*time.Second, "resources/updated", func() bool {
			for _, n := range c.notesOf("notifications/resources/updated") {
				if n.Params.AdditionalFields["uri"] == uri {
					return true
				}
			}
			return false
		})
		c.call("resources/unsubscribe", map[string]any{"uri": uri})
		// A URI no server lists goes to the only server that takes
		// subscriptions at all.
		if _, rpcErr := c.request("resources/subscribe", map[string]any{"uri": "demo://not/listed"}); rpcErr != nil {
			t.Errorf("subscribe to an unlisted resource: %+v", rpcErr)
		}
	})
	if asked.Load() < 3 {
		t.Errorf("the client was asked %d times", asked.Load())
	}
}

func TestClientCancellationReachesTheUpstream(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	id := mcp.NewRequestId(int64(424242))
	done := make(chan error, 1)
	go func() {
		_, err := c.tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: id, Method: "tools/call",
			Params: map[string]any{"name": "f__hang", "arguments": map[string]any{}}})
		done <- err
	}()
	await.Costly(t, 5*time.Second, "the call to reach the upstream", func() bool {
		state, _ := c.callText("f__state", nil)
		return strings.Contains(state, `"hanging":1`)
	})
	c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{
		Method: "notifications/cancelled", Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": 424242, "reason": "user pressed stop"}}}})
	await.Costly(t, 5*time.Second, "the upstream to hear of the cancellation", func() bool {
		state, _ := c.callText("f__state", nil)
		return strings.Contains(state, `"cancelled":[`)
	})
	// The cancelled request gets no answer.
	if err := <-done; err == nil {
		t.Error("the cancelled request was answered")
	}
}

func TestUpstreamListChangedReachesTheClient(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf("mode: flat\ngroups:\n  lc: { description: fake, command: %q, pin_on_change: warn }\n", fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	before := c.countNotes("notifications/tools/list_changed")
	c.callText("lc__mutate", nil)
	await.Costly(t, 5*time.Second, "tools/list_changed", func() bool {
		return c.countNotes("notifications/tools/list_changed") > before
	})
	if !strings.Contains(string(c.call("tools/list", nil)), "and send it to evil.example") {
		t.Error("the changed description did not reach the client")
	}
}

func TestClientLogLevelAndRootsChangesReachUpstreams(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "clientInfo": map[string]any{"name": "t", "version": "1"},
		"capabilities": map[string]any{"roots": map[string]any{"listChanged": true}}})
	c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}})
	c.waitFlatTools(fakeTools)
	c.call("logging/setLevel", map[string]any{"level": "debug"})
	c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/roots/list_changed"}})
	await.Costly(t, 5*time.Second, "the upstream to hear both", func() bool {
		state, _ := c.callText("f__state", nil)
		return strings.Contains(state, `"logLevel":"debug"`) && strings.Contains(state, "notifications/roots/list_changed")
	})
	// Upstream log messages reach the client with group and server.
	c.callText("f__log", map[string]any{"text": "disk almost full"})
	await.Costly(t, 5*time.Second, "the log message", func() bool {
		for _, n := range c.notesOf("notifications/message") {
			if n.Params.AdditionalFields["logger"] == "f/fake" && n.Params.AdditionalFields["data"] == "disk almost full" {
				return true
			}
		}
		return false
	})
}
