package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// listenMeta is the _meta of a 2026-07-28 request.
var listenMeta = modernMeta("2026-07-28")

// subscriptionID is the listen a notification says it belongs to, "" for
// none.
func subscriptionID(t *testing.T, m map[string]json.RawMessage) string {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m["params"], &p)
	return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
}

// A listen over stdio is acknowledged first, with what the hub agreed to;
// then an upstream's list_changed and a resources/updated of a URI the
// listen names reach it, each with the listen's id; a modern client gets
// no list_changed outside its listen; cancelling the listen ends it (and
// its resource subscription), and a listen open when the hub shuts down
// gets its result.
func TestListenOverStdio(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s", ""), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__mutate"]; return ok })
	c := serveStdio(t, h)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + listenMeta + `}}`)
	c.nextOf("", "1")
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + listenMeta +
		`,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}}}`)
	ack := c.nextOf("notifications/subscriptions/acknowledged", "")
	if id := subscriptionID(t, ack); id != `"L"` {
		t.Fatalf("ack's subscriptionId %s, want \"L\": %s", id, ack["params"])
	}
	if !strings.Contains(string(ack["params"]), `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}`) {
		t.Errorf("ack: %s", ack["params"])
	}
	await.For(t, 10*time.Second, "the subscription", func() bool { return h.routes.Subscribed("mem://a") })

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"mem://a"},` + listenMeta + `}}`)
	if m := c.nextOf("notifications/resources/updated", ""); subscriptionID(t, m) != `"L"` || !strings.Contains(string(m["params"]), `"uri":"mem://a"`) {
		t.Errorf("resources/updated: %s", m["params"])
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__mutate","arguments":{},` + listenMeta + `}}`)
	for told := false; ; {
		// Up to the answer of a request sent once the listen was told:
		// whatever the hub told the session of the change is in by then.
		m := c.nextAny()
		var method string
		_ = json.Unmarshal(m["method"], &method)
		switch {
		case method == "notifications/tools/list_changed" && subscriptionID(t, m) != `"L"`:
			t.Errorf("list_changed outside the listen: %s", m["params"])
		case method == "notifications/tools/list_changed" && !told:
			told = true
			c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + listenMeta + `}}`)
		}
		if string(m["id"]) == "4" {
			break
		}
	}

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	await.For(t, 10*time.Second, "the listen to end", func() bool {
		for _, s := range h.routes.List() {
			if s.(*session).lists.Len() > 0 {
				return false
			}
		}
		return !h.routes.Subscribed("mem://a")
	})

	c.send(`{"jsonrpc":"2.0","id":"M","method":"subscriptions/listen","params":{` + listenMeta + `,"notifications":{"promptsListChanged":true}}}`)
	c.nextOf("notifications/subscriptions/acknowledged", "")
	go h.Close()
	m := c.nextOf("", `"M"`)
	if !strings.Contains(string(m["result"]), `"io.modelcontextprotocol/subscriptionId":"M"`) {
		t.Errorf("listen's result at shutdown: %s", m["result"])
	}
}

// nextAny is the next message of any kind.
func (c *stdioClient) nextAny() map[string]json.RawMessage {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the hub closed stdout")
		}
		return m
	case <-time.After(time.Minute): // bounds a hang, not a timing
		c.t.Fatal("no message from the hub")
		return nil
	}
}
