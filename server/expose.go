package server

import (
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// expose lists the tools group g exposes (its expose: key) for dynamic
// mode's tools/list, beside the meta-tools: named as flat mode names them
// and routed by v.flatRoutes as flat mode routes them, so a call goes
// through the same policy and audit. Only tools the group lists visibly
// can be exposed; a name it does not have, or hides, is a warning once the
// group's servers have all started (while one starts, its tools are not
// known yet). owner records exposed names, for collision reports.
func (v *view) expose(g *upstream.Group, gv *groupView, owner map[string]string) []json.RawMessage {
	if len(g.Config.Expose) == 0 {
		return nil
	}
	settled := gv.state == upstream.StateReady
	for _, s := range g.Servers {
		settled = settled && (s.Status().State != upstream.StateStarting || s.Config.Disabled)
	}
	var out []json.RawMessage
	for _, tool := range g.Config.Expose {
		r, ok := gv.toolRoutes[tool]
		if !ok {
			if settled {
				v.warnings = append(v.warnings, fmt.Sprintf("group %s exposes tool %q, which none of its servers lists (or the group hides it)", g.Config.Name, tool))
			}
			continue
		}
		name := ExposedName(g.Config.Name, tool, g.Config.Prefix)
		if name == getToolsName || name == callToolName || name == searchToolName {
			v.problems = append(v.problems, fmt.Sprintf("tool %q of %s is not exposed: its name is that of a meta-tool of dynamic mode (set prefix: true on the group)", name, r.server.Config.ID()))
			continue
		}
		if prev, dup := owner[name]; dup {
			if v.flatRoutes[name] == r {
				continue // named twice in the list: exposed once
			}
			v.problems = append(v.problems, fmt.Sprintf("tool %q of %s is not exposed: its name collides with a tool of %s (set prefix: true on the group)", name, r.server.Config.ID(), prev))
			continue
		}
		var raw json.RawMessage
		for _, t := range gv.tools {
			if n, ok := stringValue(jsonrpc.Field(t, "name")); ok && n == tool {
				raw = t
				break
			}
		}
		renamed, err := setField(raw, "name", name)
		if err != nil {
			continue
		}
		owner[name] = r.server.Config.ID()
		v.flatRoutes[name] = r
		out = append(out, renamed)
	}
	return out
}
