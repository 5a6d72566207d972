package cooperative

import (
	"maps"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// View is the policy as one caller sees it.
type View struct {
	Groups  []*config.Group // the groups the caller's view shows, in config order
	Global  []config.Rule
	Default config.Action
}

// Rule is one rule as getPolicy lists it: the config's keys, its group
// ("" for a global rule) and its place in the order of evaluation (a
// group's rules, then the global ones; the first that matches decides).
type Rule struct {
	Name        string            `json:"name"`
	Group       string            `json:"group,omitempty"`
	Action      string            `json:"action"`
	Tool        string            `json:"tool,omitempty"`
	Args        map[string]string `json:"args,omitempty"`
	Server      string            `json:"server,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Prompt      string            `json:"prompt,omitempty"`
	Description string            `json:"description,omitempty"`
	Rate        string            `json:"rate,omitempty"`
	Priority    int               `json:"priority"`
}

// policyAnswer is getPolicy's answer, the seed's keys.
type policyAnswer struct {
	Rules         []Rule `json:"rules"`
	DefaultAction string `json:"default_action"`
	Note          string `json:"note,omitempty"`
}

// filter is what getPolicy was asked about; zero values ask nothing.
type filter struct {
	group, server, tool string // a tool the caller can see, by its server's name
	resource            string
	actionType          string
}

func getPolicy(h Host, args []byte) (any, error) {
	in, err := read(args)
	if err != nil {
		return nil, err
	}
	if err := audited(h, GetPolicy); err != nil {
		return nil, err
	}
	v := h.Policy()
	a := policyAnswer{Rules: []Rule{}, DefaultAction: string(v.Default)}
	f := filter{resource: in.Resource, actionType: in.ActionType}
	if in.ToolName != "" {
		var ok bool
		if f.group, f.server, f.tool, ok = h.Route(in.ToolName, in.Group); !ok {
			a.Note = "No tool " + in.ToolName + " is available to you."
			return a, nil
		}
	}
	for _, g := range v.Groups {
		if f.tool == "" || g.Name == f.group {
			a.Rules = appendRules(a.Rules, g.Name, g.Policy, f)
		}
	}
	a.Rules = appendRules(a.Rules, "", v.Global, f)
	return a, nil
}

// appendRules appends the rules of group ("" global) that f may concern.
func appendRules(out []Rule, group string, rules []config.Rule, f filter) []Rule {
	for i, r := range rules {
		if !f.concerns(r) {
			continue
		}
		l := Rule{Name: r.Name, Group: group, Action: string(r.Action), Tool: r.Tool, Args: maps.Clone(r.Args), Server: r.Server,
			URI: r.URI, Prompt: r.Prompt, Description: r.Description, Priority: i}
		if r.Rate != nil {
			l.Rate = r.Rate.Text
		}
		out = append(out, l)
	}
	return out
}

// concerns reports whether rule r may decide a call f asks about: the
// policy's own globs read the names (policy.CompileGlob), the arguments
// left aside (a rule on arguments is listed for the tool it names).
func (f filter) concerns(r config.Rule) bool {
	anyMethod := r.Tool == "" && r.URI == "" && r.Prompt == ""
	switch f.actionType {
	case "":
	case "resource_access":
		if r.URI == "" && !anyMethod {
			return false
		}
	default:
		if r.Tool == "" && !anyMethod {
			return false
		}
	}
	if f.tool != "" {
		if r.Server != "" && r.Server != f.server && r.Server != f.group+"/"+f.server {
			return false
		}
		if !anyMethod && !matches(r.Tool, f.tool) {
			return false
		}
	}
	if f.resource != "" && !anyMethod {
		hit := matches(r.URI, f.resource)
		for _, glob := range r.Args {
			hit = hit || anyMatches(glob, f.resource)
		}
		if !hit {
			return false
		}
	}
	return true
}

func matches(pattern, s string) bool {
	g, err := policy.CompileGlob(pattern)
	return pattern != "" && err == nil && g.Match(s)
}

// anyMatches reads s as a deny rule reads an argument (policy.Glob.MatchAny):
// in any spelling of the same path.
func anyMatches(pattern, s string) bool {
	g, err := policy.CompileGlob(pattern)
	return err == nil && g.MatchAny(s)
}
