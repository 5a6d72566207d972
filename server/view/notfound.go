package view

import (
	"iter"
	"maps"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/near"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// maxSuggested bounds the tools one "did you mean" names.
const maxSuggested = 3

// ToolNotFound is the answer to a call of name, a tool the caller cannot
// call: "Tool not found: NAME", as clients parse it, then in parentheses
// the closest of tools, the names the caller may call, when some are
// close (see near.Names), else otherwise when not "". tools are the
// caller's own (its view's, which leaves out what its profile and the
// groups' tools filters hide): a name it may not see is never suggested.
func ToolNotFound(name string, tools iter.Seq[string], otherwise string) string {
	msg := "Tool not found: " + clip.Echo(name)
	hits := near.Names(name, tools, maxSuggested)
	if len(hits) == 0 {
		if otherwise == "" {
			return msg
		}
		return msg + " (" + otherwise + ")"
	}
	for i, c := range hits {
		hits[i] = clip.Echo(c)
	}
	said := hits[0]
	if n := len(hits); n > 1 {
		said = strings.Join(hits[:n-1], ", ") + " or " + hits[n-1]
	}
	return msg + " (did you mean " + said + "?)"
}

// toolNotFound is call_dynamic_tool's answer to name, which g has no
// tool of: the closest of those g shows the caller, or where to find them.
func (g *GroupView) toolNotFound(name string) string {
	return ToolNotFound(name, maps.Keys(g.ToolRoutes), GetToolsName+" with group "+g.Name+" lists its tools")
}

// FlatToolNotFound is a flat tools/call's answer to name, which the view
// has no tool of: the closest of the tools it routes (those past
// max_tools too, which stay callable by name).
func (v *View) FlatToolNotFound(name string) string {
	return ToolNotFound(name, maps.Keys(v.FlatRoutes), "")
}

// DynamicToolNotFound is dynamic mode's answer to a tools/call of name,
// which is neither a meta-tool nor a tool a group exposes: when name is a
// tool of a group the caller may call through call_dynamic_tool, by the
// group's name for it or as flat mode names it (<group>__<tool>), which
// groups have it (maxSuggested at most, in config order) and the
// call_dynamic_tool arguments that call it (its own field names: group,
// name, args); else "Tool not found: NAME".
// Only the view's ready groups are searched, and only for the tools they
// show the caller: a tool its profile, a deny- or allow-list or a pin
// hides is answered as one that does not exist. name is the client's:
// each group costs one map lookup (two when its name and "__" begin name).
func (v *View) DynamicToolNotFound(name string) string {
	msg := "Tool not found: " + clip.Echo(name)
	type hit struct{ group, tool string }
	var hits []hit
	more := false
	for _, g := range v.Groups {
		if g.State != upstream.StateReady { // call_dynamic_tool refuses it (LookupGroup)
			continue
		}
		tool, ok := g.toolCalled(name)
		if !ok {
			continue
		}
		if len(hits) == maxSuggested {
			more = true
			break
		}
		hits = append(hits, hit{g.Name, tool})
	}
	if len(hits) == 0 {
		return msg
	}
	var in, how strings.Builder
	how.WriteString(": call it with " + CallToolName + ", ")
	for i, h := range hits {
		switch {
		case i == 0:
		case i == len(hits)-1 && !more:
			in.WriteString(" and ")
			how.WriteString(" or ")
		default:
			in.WriteString(", ")
			how.WriteString(" or ")
		}
		in.WriteString(h.group)
		how.Write(jsonrpc.AppendString([]byte(`group `), h.group))
		how.Write(jsonrpc.AppendString([]byte(`, name `), clip.Echo(h.tool)))
	}
	if more {
		in.WriteString(" and others")
	}
	group := " (it is in group "
	if len(hits) > 1 {
		group = " (it is in groups "
	}
	return msg + group + in.String() + how.String() + ", its arguments in args)"
}

// toolCalled is the name g knows the tool called name by, when g shows
// the caller one: name itself, or the rest of it after g's name and "__",
// as flat mode names g's tools.
func (g *GroupView) toolCalled(name string) (string, bool) {
	if _, ok := g.ToolRoutes[name]; ok {
		return name, true
	}
	rest, ok := strings.CutPrefix(name, g.Name)
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutPrefix(rest, separator); !ok {
		return "", false
	}
	_, ok = g.ToolRoutes[rest]
	return rest, ok
}
