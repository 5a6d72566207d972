// Package policy decides, without any I/O, whether a tool call, resource
// read or prompt get may go ahead: the group's rules first, then the
// global ones, the first match winning, the default when none matches,
// and deny when evaluating fails.
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Methods a policy applies to.
const (
	MethodToolsCall     = "tools/call"
	MethodResourcesRead = "resources/read"
	MethodPromptsGet    = "prompts/get"
)

// Request is what is asked.
type Request struct {
	Group  string          // the group that owns the target
	Server string          // the server of the group (its name, not its id)
	Method string          // one of the Method constants
	Name   string          // tool name (as its server calls it), URI, or prompt name
	Args   json.RawMessage // tool arguments; nil for the other methods
}

// Decision is the answer.
type Decision struct {
	Action      config.Action
	Rule        string // the rule that matched; "" when the default applied
	Description string // the rule's description, or why evaluation failed
}

// Policy is a config's rules, compiled.
type Policy struct {
	groups map[string][]rule
	global []rule
	def    config.Action
}

type rule struct {
	cfg               config.Rule
	tool, uri, prompt *regexp.Regexp
	args              []argMatch
	anyMethod         bool
}

type argMatch struct {
	path []string
	glob *regexp.Regexp
}

// New compiles cfg's rules.
func New(cfg *config.Config) *Policy {
	p := &Policy{groups: map[string][]rule{}, def: cfg.PolicyDefault}
	if p.def == "" {
		p.def = config.ActionAllow
	}
	for _, g := range cfg.Groups {
		p.groups[g.Name] = compile(g.Policy)
	}
	p.global = compile(cfg.Policy)
	return p
}

func compile(rules []config.Rule) []rule {
	var out []rule
	for _, r := range rules {
		c := rule{cfg: r, anyMethod: r.Tool == "" && r.URI == "" && r.Prompt == ""}
		if r.Tool != "" {
			c.tool = Glob(r.Tool)
		}
		if r.URI != "" {
			c.uri = Glob(r.URI)
		}
		if r.Prompt != "" {
			c.prompt = Glob(r.Prompt)
		}
		for path, g := range r.Args {
			c.args = append(c.args, argMatch{path: strings.Split(path, "."), glob: Glob(g)})
		}
		out = append(out, c)
	}
	return out
}

// Evaluate decides req. It never fails open: an error while evaluating is
// a deny whose description says what went wrong.
func (p *Policy) Evaluate(req Request) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = Decision{Action: config.ActionDeny, Description: fmt.Sprintf("policy evaluation failed: %v", r)}
		}
	}()
	if len(p.groups[req.Group]) == 0 && len(p.global) == 0 {
		return Decision{Action: p.def} // nothing to match: no need to read the arguments
	}
	var args any
	if len(req.Args) > 0 && !bytes.Equal(req.Args, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(req.Args))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return Decision{Action: config.ActionDeny, Description: "policy evaluation failed: arguments are not JSON: " + err.Error()}
		}
	}
	for _, rules := range [][]rule{p.groups[req.Group], p.global} {
		for _, r := range rules {
			ok, err := r.matches(req, args)
			if err != nil {
				return Decision{Action: config.ActionDeny, Rule: r.cfg.Name, Description: fmt.Sprintf("policy evaluation failed in rule %s: %v", r.cfg.Name, err)}
			}
			if ok {
				return Decision{Action: r.cfg.Action, Rule: r.cfg.Name, Description: r.cfg.Description}
			}
		}
	}
	return Decision{Action: p.def}
}

func (r *rule) matches(req Request, args any) (bool, error) {
	if r.cfg.Server != "" && r.cfg.Server != req.Server && r.cfg.Server != req.Group+"/"+req.Server {
		return false, nil
	}
	if r.anyMethod {
		return true, nil
	}
	switch req.Method {
	case MethodToolsCall:
		if r.tool == nil || !r.tool.MatchString(req.Name) {
			return false, nil
		}
		for _, a := range r.args {
			ok, err := a.matches(args, r.cfg.Action == config.ActionAllow)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case MethodResourcesRead:
		return r.uri != nil && r.uri.MatchString(req.Name), nil
	case MethodPromptsGet:
		return r.prompt != nil && r.prompt.MatchString(req.Name), nil
	}
	return false, fmt.Errorf("unknown method %q", req.Method)
}

// matches reports whether the argument at a's path matches its glob. A
// list matches for an allow rule only if every element does, and for any
// other rule if one does: either way, the stricter reading.
func (a argMatch) matches(args any, all bool) (bool, error) {
	v := args
	for _, key := range a.path {
		obj, ok := v.(map[string]any)
		if !ok {
			if v == nil {
				return false, nil
			}
			return false, fmt.Errorf("argument %s is not an object", strings.Join(a.path, "."))
		}
		if v, ok = obj[key]; !ok {
			return false, nil
		}
	}
	if list, ok := v.([]any); ok {
		if len(list) == 0 {
			return false, nil
		}
		for _, el := range list {
			if a.matchValue(el) != all {
				return !all, nil
			}
		}
		return all, nil
	}
	return a.matchValue(v), nil
}

func (a argMatch) matchValue(v any) bool {
	switch x := v.(type) {
	case string:
		return a.glob.MatchString(x)
	case json.Number:
		return a.glob.MatchString(x.String())
	case bool:
		return a.glob.MatchString(fmt.Sprint(x))
	case nil:
		return a.glob.MatchString("null")
	}
	return false // an object has no text to match
}
