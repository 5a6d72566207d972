package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// search_dynamic_tools through the built hub, in front of the npm
// reference servers: a request in the user's words finds the tool, the
// answer is enough to call it at once, a deny-listed tool is never found,
// and an exposed tool is listed and called directly.
func TestSearchReferenceServers(t *testing.T) {
	t.Parallel() // starts its own processes only
	root := t.TempDir()
	c := startHub(t, fmt.Sprintf(`
settings: { search: on, `+nodeWaits+` }
groups:
  everything:
    description: The MCP reference test server
    url: %s
  filesystem:
    description: Read and write files in the project
    command: node
    args: %s
    deny: ["^write_file$"]
    expose: [list_allowed_directories]
`, sharedEverythingURL(t), yamlList(referenceServer(t, "server-filesystem", root)[1:])))
	c.initialize("2025-06-18")
	// get_dynamic_tools waits for a group still starting: then both are up.
	for _, g := range []string{"everything", "filesystem"} {
		if text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": g}})); isErr {
			t.Fatalf("get_dynamic_tools %s: %s", g, text)
		}
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	mustUnmarshal(t, c.call("tools/list", nil), &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"get_dynamic_tools", "call_dynamic_tool", "search_dynamic_tools", "filesystem__list_allowed_directories"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list: %q, want %q", names, want)
	}

	type found struct {
		Group, Name string
		InputSchema json.RawMessage
	}
	search := func(query string, limit int) []found {
		t.Helper()
		var got []found
		mustUnmarshal(t, metaTools(t, c.call("tools/call", map[string]any{"name": "search_dynamic_tools", "arguments": map[string]any{"query": query, "limit": limit}})), &got)
		return got
	}
	for _, tc := range []struct{ query, group, tool string }{
		{"repeat my message back", "everything", "echo"},
		{"show me what is in a file", "filesystem", "read_text_file"},
	} {
		got := search(tc.query, 5)
		if len(got) == 0 || got[0].Group != tc.group || got[0].Name != tc.tool {
			t.Errorf("search %q: %+v, want %s/%s first", tc.query, got, tc.group, tc.tool)
		}
	}

	// The answer carries what a call needs: group, name and the schema.
	echo := search("repeat my message back", 1)[0]
	if !strings.Contains(string(echo.InputSchema), `"message"`) {
		t.Errorf("echo's schema: %s", echo.InputSchema)
	}
	text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": echo.Group, "name": echo.Name, "args": map[string]any{"message": "found by search"}}}))
	if isErr || !strings.Contains(text, "found by search") {
		t.Errorf("calling what search found: %q", text)
	}

	for _, q := range []string{"write a new file", "save text to disk", "write_file", "filesystem__write_file"} {
		for _, f := range search(q, 20) {
			if f.Name == "write_file" {
				t.Errorf("search %q found the deny-listed write_file", q)
			}
		}
	}

	text, isErr = toolText(t, c.call("tools/call", map[string]any{"name": "filesystem__list_allowed_directories", "arguments": map[string]any{}}))
	if isErr || !strings.Contains(text, root) {
		t.Errorf("the exposed list_allowed_directories: %q", text)
	}
}
