package server

import (
	"strings"
	"testing"
)

// In flat mode a tools/call whose arguments are not an object (a string,
// an array, a number) is refused -32602, as call_dynamic_tool refuses such
// args, and never reaches the upstream past the policy's argument rules;
// an object, and null for none, still go through.
func TestFlatNonObjectArgumentsRefused(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := &toolClient{pipeClient: servePipes(t, h, StdioOptions{})}
	c.initialize()
	for _, args := range []any{"rm -rf /", []any{"x", 1}, 42, true} {
		res := c.ask("tools/call", map[string]any{"name": "f__echo", "arguments": args})
		if !strings.Contains(res, `"code":-32602`) || !strings.Contains(res, "arguments must be an object") {
			t.Errorf("arguments %v: %s", args, res)
		}
	}
	state := c.ask("tools/call", map[string]any{"name": "f__state", "arguments": map[string]any{}})
	if strings.Contains(state, "lastParams") {
		t.Errorf("a call with arguments that are not an object reached the upstream: %s", state)
	}
	if res := c.ask("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "fine"}}); !strings.Contains(res, `"text":"fine"`) {
		t.Errorf("an object: %s", res)
	}
	if res := c.ask("tools/call", map[string]any{"name": "f__echo", "arguments": nil}); !strings.Contains(res, `"result"`) {
		t.Errorf("null: %s", res)
	}
}
