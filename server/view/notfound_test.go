package view

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

func TestToolNotFoundText(t *testing.T) {
	tools := []string{"read_file", "read_graph", "read_files", "read_first", "write_file"}
	long := strings.Repeat("x", 200)
	for _, tc := range []struct{ name, otherwise, want string }{
		{"read_grap", "", "Tool not found: read_grap (did you mean read_graph?)"},
		{"read_fil", "", "Tool not found: read_fil (did you mean read_file or read_files?)"},
		{"read", "", "Tool not found: read (did you mean read_file, read_files or read_first?)"}, // three at most
		{"delete", "", "Tool not found: delete"},
		{"delete", "see the list", "Tool not found: delete (see the list)"},
		{long, "x", "Tool not found: " + clip.Echo(long) + " (x)"},
	} {
		if got := ToolNotFound(tc.name, slices.Values(tools), tc.otherwise); got != tc.want {
			t.Errorf("ToolNotFound(%.20q)\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// A suggested name is quoted as the hub quotes what it did not write.
	longTool := "read_" + strings.Repeat("y", 300)
	if got, want := ToolNotFound("read_y", slices.Values([]string{longTool}), ""), "Tool not found: read_y (did you mean "+clip.Echo(longTool)+"?)"; got != want {
		t.Errorf("a long tool's name: %q", got)
	}
}

func TestDynamicToolNotFoundText(t *testing.T) {
	v := New("dynamic")
	for _, g := range []struct {
		name  string
		state upstream.State
		tools []string
	}{
		{"a", upstream.StateReady, []string{"x", "only_a", "b__y"}},
		{"down", upstream.StateFailed, []string{"x", "only_down"}}, // call_dynamic_tool refuses it
		{"b", upstream.StateReady, []string{"x", "y"}},
		{"c", upstream.StateReady, []string{"x"}},
		{"d", upstream.StateReady, []string{"x"}},
		{"d__e", upstream.StateReady, []string{"z"}},
	} {
		gv := &GroupView{Name: g.name, State: g.state, ToolRoutes: map[string]Route{}}
		for _, tool := range g.tools {
			gv.ToolRoutes[tool] = Route{Name: tool}
		}
		v.Groups = append(v.Groups, gv)
		v.GroupIndex[g.name] = gv
	}
	const how = ": call it with call_dynamic_tool, "
	for _, tc := range []struct{ name, want string }{
		{"only_a", `Tool not found: only_a (it is in group a` + how + `group "a", name "only_a", its arguments in args)`},
		{"a__only_a", `Tool not found: a__only_a (it is in group a` + how + `group "a", name "only_a", its arguments in args)`},
		{"x", `Tool not found: x (it is in groups a, b, c and others` + how + `group "a", name "x" or group "b", name "x" or group "c", name "x", its arguments in args)`},
		{"d__x", `Tool not found: d__x (it is in group d` + how + `group "d", name "x", its arguments in args)`},
		{"d__e__z", `Tool not found: d__e__z (it is in group d__e` + how + `group "d__e", name "z", its arguments in args)`},
		// a's own tool b__y, and b's y as flat mode names it.
		{"b__y", `Tool not found: b__y (it is in groups a and b` + how + `group "a", name "b__y" or group "b", name "y", its arguments in args)`},
		{"only_down", "Tool not found: only_down"},
		{"down__x", "Tool not found: down__x"},
		{"a__", "Tool not found: a__"},
		// Close to tools of ready groups: "did you mean" them, named as
		// flat mode names them, and how call_dynamic_tool calls them.
		{"a_x", `Tool not found: a_x (did you mean a__x, b__x or c__x? call it with call_dynamic_tool, group "a", name "x" or group "b", name "x" or group "c", name "x", its arguments in args)`},
		{"X", `Tool not found: X (did you mean a__x, b__x or c__x? call it with call_dynamic_tool, group "a", name "x" or group "b", name "x" or group "c", name "x", its arguments in args)`},
		{"onlya", `Tool not found: onlya (did you mean a__only_a? call it with call_dynamic_tool, group "a", name "only_a", its arguments in args)`},
		// After a group's name and "__", that group's tools only.
		{"a__only_b", `Tool not found: a__only_b (did you mean a__only_a? call it with call_dynamic_tool, group "a", name "only_a", its arguments in args)`},
		{"d__e__zz", `Tool not found: d__e__zz (did you mean d__e__z? call it with call_dynamic_tool, group "d__e", name "z", its arguments in args)`},
		{"b__only_a", "Tool not found: b__only_a"},
		{"only_dow", "Tool not found: only_dow"}, // a failed group's tool is none
		{"delete_everything", "Tool not found: delete_everything"},
	} {
		if got := v.DynamicToolNotFound(tc.name); got != tc.want {
			t.Errorf("DynamicToolNotFound(%q)\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	long := strings.Repeat("x", 300)
	v.Groups[0].ToolRoutes[long] = Route{Name: long}
	if got, want := v.DynamicToolNotFound(long), "Tool not found: "+clip.Echo(long)+` (it is in group a`+how+`group "a", name "`+clip.Echo(long)+`", its arguments in args)`; got != want {
		t.Errorf("a long name: %q", got)
	}
}

// The answer to a name no group has costs one near.Names over the ready
// groups' tools: -bench DynamicToolNotFound, 400 groups of 50 tools.
func BenchmarkDynamicToolNotFound(b *testing.B) {
	v := New("dynamic")
	for i := range 400 {
		gv := &GroupView{Name: fmt.Sprintf("group%d", i), State: upstream.StateReady, ToolRoutes: map[string]Route{}}
		for j := range 50 {
			tool := fmt.Sprintf("tool_%d_%d", i%7, j)
			gv.ToolRoutes[tool] = Route{Name: tool}
		}
		v.Groups = append(v.Groups, gv)
	}
	for b.Loop() {
		v.DynamicToolNotFound("tool_3_4x")
	}
}
