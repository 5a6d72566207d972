package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// hostileParams are params a careless or hostile client sends: missing,
// null, of the wrong type, with fields of the wrong type.
var hostileParams = []string{
	``, `,"params":null`, `,"params":[]`, `,"params":"x"`, `,"params":1`, `,"params":{}`,
	`,"params":{"name":null,"arguments":null,"uri":null,"cursor":null,"ref":null,"argument":null,"taskId":null,"_meta":null}`,
	`,"params":{"name":1,"arguments":[],"uri":{},"cursor":7,"ref":"x","argument":[],"taskId":{},"_meta":[]}`,
	`,"params":{"name":"f__echo","arguments":"x","_meta":{"progressToken":{}}}`,
	`,"params":{"name":"f__echo","arguments":{"text":{}},"task":"x"}`,
	`,"params":{"name":"","uri":"","cursor":"","ref":{"type":null},"argument":{"name":null}}`,
	`,"params":{"ref":{"type":"ref/prompt","name":{}},"argument":{"name":1,"value":[]}}`,
	`,"params":{"ref":{"type":"ref/resource","uri":[]},"argument":{"name":"a","value":"b"},"context":"x"}`,
	`,"params":{"cursor":"%%%not-base64","level":{}}`,
	`,"params":{"protocolVersion":{},"capabilities":[],"clientInfo":"x"}`,
}

var hostileMethods = []string{
	"initialize", "ping", "logging/setLevel", "tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
	"resources/unsubscribe", "completion/complete", "tasks/get", "tasks/result", "tasks/cancel",
	"tasks/list", "no/such/method", "",
}

// Every method with every kind of wrong params is answered, and none of
// them panics the hub (a panic is recovered, but it is a bug all the same:
// Panics counts it). Notifications of every kind with them, too.
func TestAttackHostileParamsAnsweredWithoutPanic(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer(`"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, m := range hostileMethods {
		for j, p := range hostileParams {
			id := fmt.Sprintf(`"%d-%d"`, i, j)
			for _, n := range []string{"notifications/initialized", "notifications/cancelled", "notifications/roots/list_changed", "notifications/progress", "notifications/x"} {
				c.send(`{"jsonrpc":"2.0","method":"` + n + `"` + p + `}`)
			}
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + m + `"` + p + `}`)
			a := c.answer(id)
			if !strings.Contains(a, `"result"`) && !strings.Contains(a, `"error"`) {
				t.Errorf("%s%s: %s", m, p, a)
			}
			if n := h.Panics().Count(); n != 0 {
				t.Fatalf("%s%s: the hub recovered from %d panics; answer %s", m, p, n, a)
			}
		}
	}
}

// The dynamic mode's own tools with every kind of wrong arguments are
// answered, and none panics the hub.
func TestAttackHostileDynamicArgumentsAnsweredWithoutPanic(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""), "mode: flat", "mode: dynamic", 1)
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { v := h.snapshot().view; return v.GroupIndex["f"] != nil && !v.Starting })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	args := []string{
		`null`, `[]`, `"x"`, `1`, `{}`,
		`{"group":null,"name":null,"args":null,"query":null,"limit":null}`,
		`{"group":1,"name":[],"args":"x","query":{},"limit":"x"}`,
		`{"group":"f","name":"echo","args":[]}`,
		`{"group":"f","name":"echo","args":"x"}`,
		`{"group":"f","name":"echo","args":{"text":{}}}`,
		`{"group":"nope","name":"echo"}`, `{"group":"f","name":"nope"}`,
		`{"group":"f","name":"f__echo"}`, `{"group":"","name":""}`,
		`{"query":"","limit":-1}`, `{"query":"echo","limit":1e308}`, `{"query":"echo","limit":-9e18}`,
	}
	i := 0
	for _, tool := range []string{views.GetToolsName, views.CallToolName, views.SearchToolName} {
		for _, a := range args {
			i++
			id := fmt.Sprint(i)
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + a + `}}`)
			ans := c.answer(id)
			if !strings.Contains(ans, `"result"`) && !strings.Contains(ans, `"error"`) {
				t.Errorf("%s %s: %s", tool, a, ans)
			}
			if n := h.Panics().Count(); n != 0 {
				t.Fatalf("%s %s: the hub recovered from %d panics; answer %s", tool, a, n, ans)
			}
		}
	}
}
