package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// An unknown tool's answer names the closest tools the caller may call,
// in both modes, under the "Tool not found: NAME" clients parse; never
// one the group's deny list hides, however close; and, in dynamic mode,
// where to list the group's tools when none is close. The same hub
// without the deny list suggests the tool, so the hidden one is left out
// for being hidden, not for being far.
func TestToolNotFoundSuggestsVisibleTools(t *testing.T) {
	t.Parallel()
	const pointer = " (get_dynamic_tools with group f lists its tools)"
	for _, tc := range []struct {
		mode, deny string
		want       map[string]string // name called -> the whole message
	}{
		{"dynamic", "", map[string]string{
			"ech":    "Tool not found: ech (did you mean echo?)",
			"strayy": "Tool not found: strayy (did you mean stray?)",
			"quux":   "Tool not found: quux" + pointer,
		}},
		{"dynamic", `    deny: ["^stray$"]` + "\n", map[string]string{
			"ech":    "Tool not found: ech (did you mean echo?)",
			"strayy": "Tool not found: strayy" + pointer,
			"stray":  "Tool not found: stray" + pointer,
		}},
		{"flat", "", map[string]string{
			"f__ech":    "Tool not found: f__ech (did you mean f__echo?)",
			"f__strayy": "Tool not found: f__strayy (did you mean f__stray?)",
			"quux":      "Tool not found: quux",
		}},
		{"flat", `    deny: ["^stray$"]` + "\n", map[string]string{
			"f__ech":    "Tool not found: f__ech (did you mean f__echo?)",
			"f__strayy": "Tool not found: f__strayy",
			"f__stray":  "Tool not found: f__stray",
		}},
	} {
		t.Run(fmt.Sprintf("%s deny %t", tc.mode, tc.deny != ""), func(t *testing.T) {
			t.Parallel()
			yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", tc.deny), "mode: flat", "mode: "+tc.mode, 1)
			h, _ := runHub(t, yaml, true)
			waitFor(t, 10*time.Second, "the view", func() bool {
				v := h.snapshot().view
				return v.GroupIndex["f"] != nil && v.GroupIndex["f"].ToolRoutes["echo"].Server != nil && !v.Starting
			})
			c := servePipes(t, h, StdioOptions{})
			c.send(initializeMsg)
			c.answer("0")
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			id := 0
			for name, want := range tc.want {
				id++
				params := fmt.Sprintf(`{"name":%q,"arguments":{}}`, name)
				if tc.mode == "dynamic" {
					params = fmt.Sprintf(`{"name":"call_dynamic_tool","arguments":{"group":"f","name":%q}}`, name)
				}
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
				var answer struct {
					Result struct {
						Content []struct{ Text string }
						IsError bool
					}
					Error struct {
						Code    int
						Message string
					}
				}
				line := c.answer(fmt.Sprint(id))
				if err := json.Unmarshal([]byte(line), &answer); err != nil {
					t.Fatalf("%s: %v: %s", name, err, line)
				}
				got := answer.Error.Message
				if tc.mode == "dynamic" {
					if !answer.Result.IsError || len(answer.Result.Content) != 1 {
						t.Fatalf("%s: %s", name, line)
					}
					got = answer.Result.Content[0].Text
				} else if answer.Error.Code != -32601 {
					t.Fatalf("%s: %s", name, line)
				}
				if got != want {
					t.Errorf("%s answered\n  %q\nwant\n  %q", name, got, want)
				}
			}
		})
	}
}
