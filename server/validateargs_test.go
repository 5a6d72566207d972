package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// argsClient runs a hub in mode in front of the fake with -schemas (its
// remote tool's $ref pointing at a server that fails the test if it is
// ever asked), with settings and the group's extra YAML, and an
// initialized client.
func argsClient(t *testing.T, mode, settings, group string) *toolClient {
	t.Helper()
	var hits atomic.Int32
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	t.Cleanup(func() {
		remote.Close()
		if n := hits.Load(); n > 0 {
			t.Errorf("the remote $ref was fetched %d times", n)
		}
	})
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nmode: %s\nsettings: {%s}\ngroups:\n  f:\n    description: fake\n    command: %q\n    args: [\"-schemas\", %q]\n%s",
		t.TempDir(), mode, settings, fakeBin, remote.URL+"/schema.json", group)
	h, _ := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the fake's tools", func() bool {
		g := h.snapshot().view.GroupIndex["f"]
		_, ok := g.ToolRoutes["strict"]
		return ok
	})
	c := &toolClient{pipeClient: servePipes(t, h, StdioOptions{})}
	c.initialize()
	return c
}

// callRaw sends a tools/call with params as written and returns the
// result's text and isError (failing on a JSON-RPC error).
func (c *toolClient) callRaw(params string) (string, bool) {
	c.t.Helper()
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, c.id, params))
	line := c.answer(fmt.Sprint(c.id))
	var m struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result.Content) == 0 {
		c.t.Fatalf("%s: no text result: %s", params, line)
	}
	return m.Result.Content[0].Text, m.Result.IsError
}

// lastParams are the params of the last call the fake received.
func (c *toolClient) lastParams(state string) string {
	c.t.Helper()
	text, _ := c.callText(state, map[string]any{})
	var s struct{ LastParams string }
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		c.t.Fatalf("state: %v: %s", err, text)
	}
	return s.LastParams
}

// wantRefused checks that a call is answered with an isError result that
// names each problem and carries the tool's schema.
func wantRefused(t *testing.T, c *toolClient, params string, problems ...string) {
	t.Helper()
	text, isError := c.callRaw(params)
	if !isError {
		t.Errorf("%s: not refused: %s", params, text)
		return
	}
	for _, p := range append(problems, "The tool's input schema:\n{", `"additionalProperties":false`) {
		if !strings.Contains(text, p) {
			t.Errorf("%s: the answer does not say %q:\n%s", params, p, text)
		}
	}
}

// A tools/call whose arguments do not fit the tool's inputSchema (2020-12
// or draft-07) is answered with an isError result naming each violated
// path and carrying the schema, and never reaches the upstream; one that
// fits passes byte for byte; a schema with a remote $ref (never fetched)
// or one that cannot be compiled lets the call through. In flat mode, in
// both protocol eras.
func TestValidateArgsFlat(t *testing.T) {
	t.Parallel()
	c := argsClient(t, "flat", "", "")
	for _, tool := range []string{"f__strict", "f__draft7"} {
		wantRefused(t, c, `{"name":"`+tool+`","arguments":{}}`, "Invalid arguments for tool "+tool+":", "- /path: missing property 'path'")
		wantRefused(t, c, `{"name":"`+tool+`"}`, "- /path: missing property 'path'")
		wantRefused(t, c, `{"name":"`+tool+`","arguments":{"path":"a","count":"3"}}`, "- /count: expected integer, got string")
		wantRefused(t, c, `{"name":"`+tool+`","arguments":{"path":"a","extra":1}}`, "- /extra: property 'extra' is not allowed")
		wantRefused(t, c, `{"name":"`+tool+`","arguments":{"count":1.5,"mode":"x"}}`,
			"- /path: missing property 'path'", "- /count: expected integer, got number", "- /mode: ")
	}
	wantRefused(t, c, `{"name":"f__strict","arguments":{"count":"3"},`+modernMeta("2026-07-28")+`}`,
		"- /path: missing property 'path'", "- /count: expected integer, got string")
	if p := c.lastParams("f__state"); p != "" {
		t.Errorf("a refused call reached the upstream: %s", p)
	}

	valid := `{"arguments":{ "path" : "a\u00e9", "count":3 },"name":"f__strict"}`
	if text, isError := c.callRaw(valid); isError || text != "called strict" {
		t.Fatalf("a valid call: %s", text)
	}
	if p := c.lastParams("f__state"); !strings.Contains(p, `"arguments":{ "path" : "a\u00e9", "count":3 }`) {
		t.Errorf("a valid call's arguments changed on the way: %s", p)
	}
	for _, tool := range []string{"f__remote", "f__broken"} {
		if text, isError := c.callRaw(`{"name":"` + tool + `","arguments":{"x":1}}`); isError {
			t.Errorf("%s: a schema the hub cannot compile stopped the call: %s", tool, text)
		}
	}
}

// In dynamic mode call_dynamic_tool's args are checked as a flat call's
// arguments are, and a call that gives arguments instead of args (or
// both) is answered with an error that says to use args, with the tool's
// schema, instead of being passed on with no arguments.
func TestValidateArgsDynamic(t *testing.T) {
	t.Parallel()
	c := argsClient(t, "dynamic", "", "")
	wantRefused(t, c, `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"strict","args":{"path":1}}}`,
		"Invalid arguments for tool strict:", "- /path: expected string, got number")
	wantRefused(t, c, `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"strict"}}`, "- /path: missing property 'path'")
	wantRefused(t, c, `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"strict","arguments":{"path":"a"}}}`,
		"call_dynamic_tool takes the tool's arguments in args, not arguments")
	wantRefused(t, c, `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"strict","args":{"path":"a"},"arguments":{"path":"a"}}}`,
		"call_dynamic_tool was given both args and arguments")
	// A tool with no schema to check still says so.
	if text, isError := c.callRaw(`{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","arguments":{"text":"hi"}}}`); !isError || !strings.Contains(text, "in args, not arguments") {
		t.Errorf("echo with arguments: %s", text)
	}
	if p := c.lastParams2(); p != "" {
		t.Errorf("a refused call reached the upstream: %s", p)
	}
	if text, isError := c.callRaw(`{"name":"call_dynamic_tool","arguments":{"group":"f","name":"strict","args":{"path":"b",  "count":2}}}`); isError || text != "called strict" {
		t.Fatalf("a valid call: %s", text)
	}
	if p := c.lastParams2(); !strings.Contains(p, `"arguments":{"path":"b",  "count":2}`) {
		t.Errorf("a valid call's arguments changed on the way: %s", p)
	}
}

// lastParams2 is lastParams through call_dynamic_tool.
func (c *toolClient) lastParams2() string {
	c.t.Helper()
	text, _ := c.callRaw(`{"name":"call_dynamic_tool","arguments":{"group":"f","name":"state"}}`)
	var s struct{ LastParams string }
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		c.t.Fatalf("state: %v: %s", err, text)
	}
	return s.LastParams
}

// settings.validate_args: off, or the group's, lets a call that does not
// fit through to the upstream, which answers it.
func TestValidateArgsOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, settings, group string }{
		{"setting", "validate_args: off", ""},
		{"group", "", "    validate_args: off\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := argsClient(t, "flat", tc.settings, tc.group)
			if text, isError := c.callRaw(`{"name":"f__strict","arguments":{"count":"3"}}`); isError || text != "called strict" {
				t.Errorf("validate_args: off: %s", text)
			}
		})
	}
}
