package mcphttp

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// eliciting answers every elicitation with a name, counting them.
type eliciting struct{ asked int }

func (e *eliciting) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.asked++
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": "Hal"}}}, nil
}

// mcp-go's own client, in the era it picks by default (2026-07-28: it
// discovers, never initializes), calls the fake's ask tool through the
// hub over HTTP: the fake's elicitation reaches the client's elicitation
// handler by an input_required round, and the call completes with its
// answer. (Before, the hub passed the elicitation on as a request of its
// own, which 2026-07-28 has no place for; without a session it refused it.)
func TestMCPGoClientElicitsThroughInputRequired(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTP(t, h)
	e := &eliciting{}
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c = client.NewClient(c.GetTransport(), client.WithElicitationHandler(e))
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !mcp.IsModernProtocol(init.ProtocolVersion) {
		t.Fatalf("the client settled on %s, not 2026-07-28", init.ProtocolVersion)
	}
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "f__ask", Arguments: map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "Hal") || e.asked != 1 {
		t.Errorf("result %+v, asked %d times", res, e.asked)
	}
}
