package view

import (
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// expose lists the tools group g exposes (its expose: key) for dynamic
// mode's tools/list, beside the meta-tools: named as flat mode names them
// and routed by v.FlatRoutes as flat mode routes them, so a call goes
// through the same policy and audit. Only tools the group lists visibly
// can be exposed; a name it does not have, or hides, is a warning once the
// group's servers have all started (while one starts, its tools are not
// known yet). owner records exposed names, for collision reports.
func (v *View) expose(g *upstream.Group, gv *GroupView, owner map[string]string) []json.RawMessage {
	if len(g.Config.Expose) == 0 {
		return nil
	}
	settled := gv.State == upstream.StateReady
	for _, s := range g.Servers {
		settled = settled && (s.Status().State != upstream.StateStarting || s.Config.Disabled)
	}
	var out []json.RawMessage
	for _, tool := range g.Config.Expose {
		r, ok := gv.ToolRoutes[tool]
		if !ok {
			if settled {
				v.Warnings = append(v.Warnings, fmt.Sprintf("group %s exposes tool %q, which none of its servers lists (or the group hides it)", g.Config.Name, tool))
			}
			continue
		}
		name := ExposedName(g.Config.Name, tool, g.Config.Prefix)
		if name == GetToolsName || name == CallToolName || name == SearchToolName {
			v.Problems = append(v.Problems, fmt.Sprintf("tool %q of %s is not exposed: its name is that of a meta-tool of dynamic mode (set prefix: true on the group)", name, r.Server.Config.ID()))
			continue
		}
		if prev, dup := owner[name]; dup {
			if v.FlatRoutes[name] == r {
				continue // named twice in the list: exposed once
			}
			v.Problems = append(v.Problems, fmt.Sprintf("tool %q of %s is not exposed: its name collides with a tool of %s (set prefix: true on the group)", name, r.Server.Config.ID(), prev))
			continue
		}
		var raw json.RawMessage
		for _, t := range gv.Tools {
			var n string
			if json.Unmarshal(jsonrpc.Field(t, "name"), &n) == nil && n == tool {
				raw = t
				break
			}
		}
		renamed, err := withName(raw, name)
		if err != nil {
			continue
		}
		owner[name] = r.Server.Config.ID()
		v.FlatRoutes[name] = r
		out = append(out, renamed)
	}
	return out
}
