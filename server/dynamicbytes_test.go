package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// call_dynamic_tool sends the upstream the client's args and _meta byte
// for byte (white space, <, & and the digits of numbers as written), under
// the tool's own name.
func TestCallDynamicToolPassesArgsBytes(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""), "mode: flat", "mode: dynamic", 1)
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { v := h.snapshot().view; return v.GroupIndex["f"] != nil && !v.Starting })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	const args = `{ "text" : "<b> & \u00e9",  "n": 1.50e1 }`
	const meta = `{"x-trace": "a&b" }`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":` +
		args + `},"_meta":` + meta + `}}`)
	if got := c.answer("1"); !strings.Contains(got, `"result"`) {
		t.Fatalf("echo: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"state"}}}`)
	var answer struct {
		Result struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal([]byte(c.answer("2")), &answer); err != nil || len(answer.Result.Content) != 1 {
		t.Fatalf("state: %v %+v", err, answer)
	}
	var st struct{ LastParams string }
	if err := json.Unmarshal([]byte(answer.Result.Content[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	if want := `{"_meta":` + meta + `,"arguments":` + args + `,"name":"echo"}`; st.LastParams != want {
		t.Errorf("the upstream got\n%s\nwant\n%s", st.LastParams, want)
	}
}
