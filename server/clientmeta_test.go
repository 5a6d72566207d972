package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// modernCall is a 2026-07-28 tools/call of name with id, stating caps
// (a JSON object, "" for none) in its _meta.
func modernCall(id, name, caps string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"}`
	if caps != "" {
		meta += `,"io.modelcontextprotocol/clientCapabilities":` + caps
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{"text":"hi"},"_meta":{` + meta + `}}}`
}

// A 2026-07-28 client sends no initialize: what it states in each
// request's _meta is what it can do. An upstream's elicitation during a
// call that states elicitation reaches it, a prompt policy asks it, and a
// later request that states none is refused both, with no guess carried
// over from the first.
func TestModernClientCapabilitiesComeFromMeta(t *testing.T) {
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    policy:
      - {action: prompt, tool: "echo"}
      - {action: allow, tool: "*"}
`), false)
	waitFor(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	waitFor(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.flatRoutes["f__ask"]; return ok })
	c := servePipes(t, h, StdioOptions{})

	// answerElicitation reads until the hub's elicitation/create and
	// accepts it with content.
	answerElicitation := func(content string) {
		t.Helper()
		all := c.readUntil(func(line string) bool { return strings.Contains(line, `"method":"elicitation/create"`) })
		var req struct{ ID json.RawMessage }
		mustJSON(t, all[strings.LastIndex(all[:len(all)-1], "\n")+1:], &req)
		c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":` + content + `}}`)
	}

	c.send(modernCall("1", "f__ask", `{"elicitation":{}}`))
	answerElicitation(`{"name":"Ada"}`)
	if got := c.answer("1"); !strings.Contains(got, "Ada") {
		t.Errorf("the upstream's elicitation, stated in _meta: %s", got)
	}
	c.send(modernCall("2", "f__echo", `{"elicitation":{}}`))
	answerElicitation(`{}`)
	if got := c.answer("2"); !strings.Contains(got, `"result"`) || strings.Contains(got, "isError") {
		t.Errorf("a prompt policy asking a client that stated elicitation: %s", got)
	}
	if caps, known := h.sessionList()[0].ClientCapabilities(); !known || caps.Elicitation == nil {
		t.Errorf("session capabilities %+v, known %v", caps, known)
	}

	c.send(modernCall("3", "f__ask", `{}`))
	if got := c.answer("3"); !strings.Contains(got, "does not support elicitation/create") {
		t.Errorf("the upstream's elicitation, none stated: %s", got)
	}
	c.send(modernCall("4", "f__echo", ""))
	if got := c.answer("4"); !strings.Contains(got, "-32001") {
		t.Errorf("a prompt policy, no capabilities stated: %s", got)
	}
}
