package view

import (
	"iter"
	"maps"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/near"
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
