package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// UnknownArgs lists the rules that name an argument tool (of server in
// group) does not have by its input schema, each with the names it does
// have, so that a rule that can never match is found before it matters
// (path on read_multiple_files, which takes paths). Keys compare without
// regard to case, as rules match them. Rules whose tool glob is * or **
// are left out: they name an argument for the tools that have it.
func (p *Policy) UnknownArgs(group, server, tool string, inputSchema json.RawMessage) []string {
	var schema any
	if json.Unmarshal(inputSchema, &schema) != nil {
		return nil
	}
	var out []string
	for _, rules := range [][]rule{p.groups[group], p.global} {
		for _, r := range rules {
			if r.tool == nil || r.broken != nil || r.cfg.Tool == "*" || r.cfg.Tool == "**" || !r.tool.Match(tool) {
				continue
			}
			if r.cfg.Server != "" && r.cfg.Server != server && r.cfg.Server != group+"/"+server {
				continue
			}
			for _, a := range r.args {
				if a.path == nil {
					continue
				}
				if have, ok := missingArg(schema, a.path); ok {
					out = append(out, fmt.Sprintf("policy rule %s names argument %q, which tool %s of %s/%s does not have (its arguments: %s)",
						r.cfg.Name, a.key, tool, group, server, have))
				}
			}
		}
	}
	return out
}

// missingArg walks path down schema's properties (through the items of an
// array) and reports whether an object schema on the way does not declare
// its key, with the keys it does; ok is false when every key is there or
// the schema does not say.
func missingArg(schema any, path []string) (have string, ok bool) {
	s, _ := schema.(map[string]any)
	for _, k := range path {
		for s != nil && s["type"] == "array" {
			s, _ = s["items"].(map[string]any)
		}
		if s == nil {
			return "", false
		}
		props, hasProps := s["properties"].(map[string]any)
		if !hasProps && s["type"] != "object" {
			return "", false // not an object schema: it does not say
		}
		var next any
		found := false
		names := make([]string, 0, len(props))
		for name, v := range props {
			names = append(names, name)
			if strings.EqualFold(name, k) {
				next, found = v, true
			}
		}
		if !found {
			sort.Strings(names)
			if len(names) == 0 {
				return "none", true
			}
			return strings.Join(names, ", "), true
		}
		s, _ = next.(map[string]any)
	}
	return "", false
}
