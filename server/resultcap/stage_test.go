package resultcap

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/call/calltest"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
)

// Only a tool's own result that went upstream is cut: not a task's, not
// one a stage answered (Sent unset), not another method's.
func TestStageCutsSentToolResults(t *testing.T) {
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}]}`)
	s := Stage{Store: New(Options{})}
	run := func(c *call.Call) json.RawMessage {
		res, err := s.Handle(t.Context(), c, call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) { return big, nil }))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sent := func() *call.Call {
		c := calltest.ToolCall("t")
		c.ID, c.MaxResult, c.Sent = json.RawMessage(`1`), 2000, true
		return c
	}
	if res := run(sent()); len(res) > 2000 || !strings.Contains(string(res), Scheme) {
		t.Fatalf("a sent tool result over max_result: %d bytes: %.300s", len(res), res)
	}
	for name, c := range map[string]*call.Call{"not sent": sent(), "task": sent(), "a read": sent(), "no cap": sent()} {
		switch name {
		case "not sent":
			c.Sent = false
		case "task":
			c.Task = true
		case "a read":
			c.Method = policy.MethodResourcesRead
		case "no cap":
			c.MaxResult = 0
		}
		if res := run(c); len(res) != len(big) {
			t.Errorf("%s: cut to %d bytes", name, len(res))
		}
	}
}
