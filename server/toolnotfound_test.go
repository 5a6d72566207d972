package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
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
			await.For(t, 10*time.Second, "the view", func() bool {
				v := h.snapshot().view
				return v.GroupIndex["f"] != nil && v.GroupIndex["f"].ToolRoutes["echo"].Server != nil && !v.Starting
			})
			c := servePipes(t, h, StdioOptions{})
			c.initialize()
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

// In dynamic mode a group's tool called by tools/call, as if it were
// listed, by its own name or as flat mode names it, is answered with the
// groups that have it and the call_dynamic_tool arguments that call it,
// under the same -32601 "Tool not found: NAME"; a tool the caller cannot
// see (hidden by a deny list in every group, or in a group outside its
// profile) and a name no group has are answered as before; a name close
// to tools the caller may call is answered "did you mean" them. The session
// with the whole config is told of the group its profile leaves out, so
// that group's tool is left out for being hidden, not for being absent.
func TestDynamicToolNotFoundSaysHowToCall(t *testing.T) {
	t.Parallel()
	const (
		echo   = `Tool not found: %s (it is in groups f and g: call it with call_dynamic_tool, group "f", name "echo" or group "g", name "echo", its arguments in args)`
		notes  = `Tool not found: %s (it is in group g: call it with call_dynamic_tool, group "g", name "notes", its arguments in args)`
		secret = `Tool not found: secret (it is in group h: call it with call_dynamic_tool, group "h", name "secret", its arguments in args)`
	)
	fake := func(name, tools string) string {
		return fmt.Sprintf("    description: fake\n    command: %q\n    args: [\"-name\", %q, \"-tools\", %q]\n    deny: [\"^stray$\"]\n", fakeBin, name, tools)
	}
	yaml := fmt.Sprintf("mode: dynamic\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {call_timeout: 5s}\nprofiles:\n  p: {groups: [f, g]}\ngroups:\n  f:\n%s  g:\n%s  h:\n%s",
		t.TempDir(), fake("f", "solo"), fake("g", "notes"), fake("h", "secret"))
	h, _ := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the views", func() bool {
		for _, p := range []string{"", "p"} {
			v := h.snapshot().viewOf(p)
			if v.Starting || len(v.Groups) == 0 {
				return false
			}
			for _, g := range v.Groups {
				if g.ToolRoutes["echo"].Server == nil {
					return false
				}
			}
		}
		return true
	})
	for _, tc := range []struct {
		profile string
		want    map[string]string // name called -> the whole message
	}{
		{"p", map[string]string{
			"echo":        fmt.Sprintf(echo, "echo"),
			"notes":       fmt.Sprintf(notes, "notes"),
			"g__notes":    fmt.Sprintf(notes, "g__notes"),
			"f__notes":    "Tool not found: f__notes",
			"stray":       "Tool not found: stray",    // denied in every group
			"f__stray":    "Tool not found: f__stray", // the same, as flat mode would name it
			"secret":      "Tool not found: secret",   // in h, outside the profile
			"h__secret":   "Tool not found: h__secret",
			"quux":        "Tool not found: quux",
			"g__":         "Tool not found: g__",
			"get_dynamic": "Tool not found: get_dynamic",
			// Misspelled: the close tools the caller may call, never a hidden one.
			"note":   `Tool not found: note (did you mean g__notes? call it with call_dynamic_tool, group "g", name "notes", its arguments in args)`,
			"f__ech": `Tool not found: f__ech (did you mean f__echo? call it with call_dynamic_tool, group "f", name "echo", its arguments in args)`,
			"secre":  "Tool not found: secre", // in h, outside the profile
			"stra":   "Tool not found: stra",  // denied in every group
		}},
		{"", map[string]string{
			"echo":   `Tool not found: echo (it is in groups f, g and h: call it with call_dynamic_tool, group "f", name "echo" or group "g", name "echo" or group "h", name "echo", its arguments in args)`,
			"secret": secret,
			"stray":  "Tool not found: stray",
		}},
	} {
		t.Run("profile "+tc.profile, func(t *testing.T) {
			// A session id of its own: the last subtest's session may
			// still be ending (its drain), and ids are unique.
			c := servePipes(t, h, StdioOptions{Profile: tc.profile, SessionID: "notfound-" + tc.profile})
			c.initialize()
			id := 0
			for name, want := range tc.want {
				id++
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"hi"}}}`, id, name))
				var answer struct {
					Error struct {
						Code    int
						Message string
					}
				}
				line := c.answer(fmt.Sprint(id))
				if err := json.Unmarshal([]byte(line), &answer); err != nil || answer.Error.Code != -32601 {
					t.Fatalf("%s: %v: %s", name, err, line)
				}
				if answer.Error.Message != want {
					t.Errorf("%s answered\n  %q\nwant\n  %q", name, answer.Error.Message, want)
				}
			}
		})
	}
}
