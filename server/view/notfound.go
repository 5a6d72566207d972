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
	return msg + " (did you mean " + joinAlternatives(hits) + "?)"
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
// name, args); else, when tools of those groups are close to name (see
// nearTools), "did you mean" them and the arguments that call them; else
// "Tool not found: NAME".
// Only the view's ready groups are searched, and only for the tools they
// show the caller: a tool its profile, a deny- or allow-list or a pin
// hides is answered as one that does not exist. name is the client's:
// each group costs one map lookup (two when its name and "__" begin name),
// and a name no group has one near.Names over the groups' tools.
func (v *View) DynamicToolNotFound(name string) string {
	msg := "Tool not found: " + clip.Echo(name)
	var hits []groupTool
	more := false
	for g := range v.readyGroups() {
		tool, ok := g.toolCalled(name)
		if !ok {
			continue
		}
		if len(hits) == maxSuggested {
			more = true
			break
		}
		hits = append(hits, groupTool{g.Name, tool})
	}
	if len(hits) == 0 {
		hits = v.nearTools(name)
		if len(hits) == 0 {
			return msg
		}
		said := make([]string, len(hits))
		for i, h := range hits {
			said[i] = clip.Echo(h.group + separator + h.tool)
		}
		return msg + " (did you mean " + joinAlternatives(said) + "? " + callWith(hits) + ")"
	}
	var in strings.Builder
	for i, h := range hits {
		switch {
		case i == 0:
		case i == len(hits)-1 && !more:
			in.WriteString(" and ")
		default:
			in.WriteString(", ")
		}
		in.WriteString(h.group)
	}
	if more {
		in.WriteString(" and others")
	}
	group := " (it is in group "
	if len(hits) > 1 {
		group = " (it is in groups "
	}
	return msg + group + in.String() + ": " + callWith(hits) + ")"
}

// groupTool is a tool as call_dynamic_tool names it.
type groupTool struct{ group, tool string }

// readyGroups are the view's groups call_dynamic_tool may call, in config
// order: those ready (LookupGroup refuses the others).
func (v *View) readyGroups() iter.Seq[*GroupView] {
	return func(yield func(*GroupView) bool) {
		for _, g := range v.Groups {
			if g.State == upstream.StateReady && !yield(g) {
				return
			}
		}
	}
}

// nearTools are the tools of the ready groups close to name (near.Names),
// maxSuggested at most: when name begins with a ready group's name and
// "__", as flat mode names the group's tools, those of that group close
// to the rest of it (of each such group in config order, the closest
// first); else the tools whose own names are close to name, the closest
// first, each in the groups that have it, in config order. Its cost is
// one near.Names over the ready groups' tools.
func (v *View) nearTools(name string) []groupTool {
	var hits []groupTool
	prefixed := false
	for g := range v.readyGroups() {
		rest, ok := strings.CutPrefix(name, g.Name+separator)
		if !ok {
			continue
		}
		prefixed = true
		for _, tool := range near.Names(rest, maps.Keys(g.ToolRoutes), maxSuggested) {
			hits = append(hits, groupTool{g.Name, tool})
		}
	}
	if prefixed {
		return hits[:min(len(hits), maxSuggested)]
	}
	// Each tool's name once, though several groups have it.
	seen := map[string]struct{}{}
	tools := func(yield func(string) bool) {
		for g := range v.readyGroups() {
			for tool := range g.ToolRoutes {
				if _, ok := seen[tool]; ok {
					continue
				}
				seen[tool] = struct{}{}
				if !yield(tool) {
					return
				}
			}
		}
	}
	for _, tool := range near.Names(name, tools, maxSuggested) {
		for g := range v.readyGroups() {
			if _, ok := g.ToolRoutes[tool]; !ok {
				continue
			}
			if hits = append(hits, groupTool{g.Name, tool}); len(hits) == maxSuggested {
				return hits
			}
		}
	}
	return hits
}

// joinAlternatives is "a", "a or b", "a, b or c".
func joinAlternatives(s []string) string {
	if n := len(s); n > 1 {
		return strings.Join(s[:n-1], ", ") + " or " + s[n-1]
	}
	return s[0]
}

// callWith says how call_dynamic_tool calls hits: "call it with
// call_dynamic_tool, group "g", name "t" or group ..., its arguments in
// args".
func callWith(hits []groupTool) string {
	var how strings.Builder
	how.WriteString("call it with " + CallToolName + ", ")
	for i, h := range hits {
		if i > 0 {
			how.WriteString(" or ")
		}
		how.Write(jsonrpc.AppendString([]byte(`group `), h.group))
		how.Write(jsonrpc.AppendString([]byte(`, name `), clip.Echo(h.tool)))
	}
	how.WriteString(", its arguments in args")
	return how.String()
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
