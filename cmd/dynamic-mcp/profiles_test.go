package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// profilesConfig has three groups of fakes and two profiles that show two
// of them, one in each mode.
func profilesConfig() string {
	return fmt.Sprintf(`settings: {shared: "off"}
groups:
  a: {description: group a, command: %[1]q, args: ["-prefix", "-name", "a"]}
  b: {description: group b, command: %[1]q, args: ["-prefix", "-name", "b"]}
  c: {description: group c, command: %[1]q, args: ["-prefix", "-name", "c"]}
profiles:
  dyn: {groups: [c, a], search: on}
  flat: {groups: [a, c], mode: flat}
  capped: {groups: [a, b, c], mode: flat, max_tools: 40}
`, fakeBin)
}

func toolNames(t *testing.T, res json.RawMessage) []string {
	t.Helper()
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	mustUnmarshal(t, res, &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// serve --profile in dynamic mode shows exactly the profile's groups: the
// enum, get_dynamic_tools and call_dynamic_tool know no other.
func TestServeProfileDynamic(t *testing.T) {
	t.Parallel() // its hub is its own
	c := startHub(t, profilesConfig(), "--profile", "dyn")
	c.initialize("2025-11-25")
	c.waitGroupsReady("a", "c")
	if text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "c", "name": "c_echo", "args": map[string]any{"text": "hi"}}})); isErr || !strings.Contains(text, "hi") {
		t.Fatalf("call in a shown group: %q (error %v)", text, isErr)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"get_dynamic_tools", map[string]any{"group": "b"}},
		{"call_dynamic_tool", map[string]any{"group": "b", "name": "b_echo", "args": map[string]any{"text": "hi"}}},
	} {
		res := c.call("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args})
		if text, isErr := toolText(t, res); !isErr || text != "Unknown group: b (groups: a, c)" {
			t.Errorf("%s of hidden group b answered %q (error %v)", tc.tool, text, isErr)
		}
	}
	if strings.Contains(string(c.call("tools/list", nil)), "group b") {
		t.Error("tools/list names the hidden group b")
	}
	// Search finds the echo tools of a and c, never b's.
	text := metaTools(t, c.call("tools/call", map[string]any{"name": "search_dynamic_tools", "arguments": map[string]any{"query": "echo", "limit": 20}}))
	var found []struct{ Group, Name string }
	mustUnmarshal(t, text, &found)
	groups := map[string]bool{}
	for _, f := range found {
		groups[f.Group] = true
	}
	if groups["b"] || !groups["a"] || !groups["c"] {
		t.Errorf("search for echo found groups %v, want a and c only: %s", groups, text)
	}
}

// serve --profile in flat mode lists exactly the profile's groups' tools,
// and a tool of a hidden group is unknown.
func TestServeProfileFlat(t *testing.T) {
	t.Parallel() // its hub is its own
	c := startHub(t, profilesConfig(), "--profile", "flat")
	c.initialize("2025-11-25")
	var names []string
	await.Costly(t, 30*time.Second, "a and c listed", func() bool {
		names = toolNames(t, c.call("tools/list", nil))
		return slices.Contains(names, "a__a_echo") && slices.Contains(names, "c__c_echo")
	})
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "c__") {
			t.Errorf("tool %q is not of group a or c", n)
		}
	}
	// Answered as a tool that does not exist, the hint naming the
	// profile's tools alone.
	const hidden = "Tool not found: b__b_echo (did you mean a__a_echo or c__c_echo?)"
	res, rpcErr := c.request("tools/call", map[string]any{"name": "b__b_echo", "arguments": map[string]any{"text": "hi"}})
	if rpcErr == nil {
		if text, isErr := toolText(t, res); !isErr || text != hidden {
			t.Errorf("hidden tool answered %q (error %v)", text, isErr)
		}
	} else if rpcErr.Message != hidden {
		t.Errorf("hidden tool: %d %s", rpcErr.Code, rpcErr.Message)
	}
}

// A profile's max_tools: 40 lists 40 of the three fakes' tools, and a tool
// past the cap is still callable.
func TestServeProfileMaxTools(t *testing.T) {
	t.Parallel() // its hub is its own
	c := startHub(t, profilesConfig(), "--profile", "capped")
	c.initialize("2025-11-25")
	await.Costly(t, 30*time.Second, "group c started", func() bool {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "c__c_echo", "arguments": map[string]any{"text": "hi"}})
		if rpcErr != nil {
			return false
		}
		text, isErr := toolText(t, res)
		return !isErr && strings.Contains(text, "hi")
	})
	if names := toolNames(t, c.call("tools/list", nil)); len(names) != 40 {
		t.Fatalf("listed %d tools, want 40: %v", len(names), names)
	}
}

// An unknown profile is a usage error at start, naming the profiles.
func TestServeUnknownProfile(t *testing.T) {
	path := writeConfig(t, profilesConfig())
	var stderr strings.Builder
	err := run(t.Context(), []string{"serve", "-c", path, "--profile", "nope"}, strings.NewReader(""), &strings.Builder{}, &stderr)
	if code := exitStatus(err, &stderr); code != 2 || !strings.Contains(stderr.String(), `profile "nope" is not in the config (profiles: [capped dyn flat])`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// initializeAs runs the handshake as the client named name.
func (c *client) initializeAs(name string) {
	c.t.Helper()
	c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "1"}})
}

// A clients: rule caps the tools listed to a client by its name (Cursor
// reads the first 40), and leaves every other client the whole list.
func TestClientRuleMaxTools(t *testing.T) {
	t.Parallel() // its hubs are its own
	cfg := strings.Replace(profilesConfig(), "groups:", "mode: flat\nclients:\n  - {match: 'cursor*', max_tools: 40}\ngroups:", 1)
	for name, want := range map[string]int{"Cursor-VSCode": 40, "claude-code": 57} {
		t.Run(name, func(t *testing.T) {
			c := startHub(t, cfg)
			c.initializeAs(name)
			await.Costly(t, 30*time.Second, "every group started", func() bool {
				for _, tool := range []string{"a__a_echo", "b__b_echo", "c__c_echo"} {
					res, rpcErr := c.request("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "hi"}})
					if rpcErr != nil {
						return false
					}
					if _, isErr := toolText(t, res); isErr {
						return false
					}
				}
				return true
			})
			if names := toolNames(t, c.call("tools/list", nil)); len(names) != want {
				t.Fatalf("%s is shown %d tools, want %d", name, len(names), want)
			}
		})
	}
}

// A clients: rule with schemas: gemini shows a Gemini client the
// everything server's tools with schemas in Gemini's subset; another
// client gets them as the server wrote them.
func TestClientRuleGeminiSchemas(t *testing.T) {
	t.Parallel() // its hubs are its own
	cfg := fmt.Sprintf("mode: flat\nsettings: {shared: \"off\", "+nodeWaits+"}\nclients:\n  - {match: 'gemini*', schemas: gemini}\ngroups:\n  ev: {description: The reference server, url: %s}\n",
		sharedEverythingURL(t))
	for name, wantClean := range map[string]bool{"gemini-cli-mcp-client": true, "claude-code": false} {
		t.Run(name, func(t *testing.T) {
			c := startHub(t, cfg)
			c.initializeAs(name)
			var list struct {
				Tools []map[string]any `json:"tools"`
			}
			await.Costly(t, 30*time.Second, "the everything server's tools", func() bool {
				mustUnmarshal(t, c.call("tools/list", nil), &list)
				return len(list.Tools) > 5
			})
			broken := 0
			for _, tool := range list.Tools {
				if bad := geminiDeclarationProblems(tool); len(bad) > 0 {
					broken++
					if wantClean {
						t.Errorf("%s: %s", tool["name"], strings.Join(bad, "; "))
					}
				}
			}
			if !wantClean && broken == 0 {
				t.Error("the unshaped schemas keep Gemini's rules already: the test proves nothing")
			}
		})
	}
}

// schemas: gemini shows a Gemini client tool names in Gemini's character
// set, and a call by the shown name reaches the tool.
func TestClientRuleGeminiNames(t *testing.T) {
	t.Parallel() // its hub is its own
	cfg := fmt.Sprintf("mode: flat\nsettings: {shared: \"off\"}\nclients:\n  - {match: 'gemini*', schemas: gemini}\ngroups:\n  g: {description: g, command: %q, args: [\"-prefix\", \"-name\", \"x/y\"]}\n", fakeBin)
	c := startHub(t, cfg)
	c.initializeAs("gemini-cli-mcp-client")
	var names []string
	await.Costly(t, 30*time.Second, "the fake's tools", func() bool {
		names = toolNames(t, c.call("tools/list", nil))
		return len(names) > 5
	})
	if !slices.Contains(names, "g__x_y_echo") || slices.Contains(names, "g__x/y_echo") {
		t.Fatalf("names shown: %v", names)
	}
	text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "g__x_y_echo", "arguments": map[string]any{"text": "hi"}}))
	if isErr || !strings.Contains(text, "hi") {
		t.Fatalf("call by the shown name: %q (error %v)", text, isErr)
	}
}
