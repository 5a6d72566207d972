// Package policy decides, without any I/O, whether a tool call, resource
// read or prompt get may go ahead: the group's rules first, then the
// global ones, the first match winning, the default when none matches,
// and deny when evaluating fails.
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Methods a policy applies to.
const (
	MethodToolsCall     = "tools/call"
	MethodResourcesRead = "resources/read"
	MethodPromptsGet    = "prompts/get"
	// The Skills extension's (SEP-2640) are reads of resources to the
	// policy, named by URI as resources/read is: a skill by its SKILL.md's,
	// a directory by its own.
	MethodSkillsGet     = "skills/get"
	MethodDirectoryRead = "resources/directory/read"
)

// Request is what is asked.
type Request struct {
	Group  string          // the group that owns the target
	Server string          // the server of the group (its name, not its id)
	Method string          // one of the Method constants
	Name   string          // tool name (as its server calls it), URI, or prompt name
	Args   json.RawMessage // tool arguments; nil for the other methods

	// ResourceName is, for resources/read, the resource's name as its
	// server lists it, where known: a group may hide a resource by name.
	ResourceName string
}

// Decision is the answer.
type Decision struct {
	Action      config.Action
	Rule        string // the rule that matched; "" when the default applied
	Description string // the rule's description, or why evaluation failed

	// Rate is the matched rule's loop guard (rate: N/period), nil when it
	// has none; RuleGroup is the group whose policy holds that rule, ""
	// for a global one. The two name the rule's counters (see the hub's
	// rate limiter): the policy itself keeps no state.
	Rate      *config.RateLimit
	RuleGroup string
}

// Policy is a config's rules, compiled.
type Policy struct {
	// configs are the groups that filter anything (tools, prompts or
	// resources), by name: a call to any other group's is not looked at
	// for a filter that hides nothing.
	configs map[string]*config.Group
	groups  map[string][]rule
	global  []rule
	def     config.Action
	limits  bool // a rule has a rate (see Limits)
}

type rule struct {
	cfg               config.Rule
	tool, uri, prompt *Glob
	args              []argMatch
	anyMethod         bool
	broken            error // a glob that does not compile: the rule denies
}

// argMatch is one entry of a rule's args: the dotted path of an argument,
// its keys matched without regard to case, or AnyArg; and the glob on its
// value.
type argMatch struct {
	key  string
	path []string // nil for AnyArg
	glob Glob
}

// AnyArg as the key of a rule's args matches every value of the arguments
// at any depth, in objects and lists alike.
const AnyArg = "*"

// New compiles cfg's rules.
func New(cfg *config.Config) *Policy {
	p := &Policy{configs: map[string]*config.Group{}, groups: map[string][]rule{}, def: cfg.PolicyDefault}
	if p.def == "" {
		p.def = config.ActionAllow
	}
	for _, g := range cfg.Groups {
		if filters(g.Tools) || filters(g.Prompts) || filters(g.Resources) {
			p.configs[g.Name] = g
		}
		p.groups[g.Name] = compile(g.Policy)
	}
	p.global = compile(cfg.Policy)
	for _, rules := range append(slices.Collect(maps.Values(p.groups)), p.global) {
		for _, r := range rules {
			p.limits = p.limits || r.cfg.Rate != nil
		}
	}
	return p
}

// filters reports whether f hides anything (see config.Filter.Hides).
func filters(f config.Filter) bool { return len(f.Deny) > 0 || len(f.Allow) > 0 }

// Limits reports whether a rule of p has a rate (a loop guard): without
// one no Decision has a Rate, and nothing is counted.
func (p *Policy) Limits() bool { return p.limits }

// Fixed are the decisions that read nothing of a call, by group name: a
// group that filters nothing, under a config without rules of its own
// or global ones, has every call decided the default (Decide, Evaluate).
// The gate works them out once per config snapshot (gate.NewDecide):
// a call to such a group is not asked about again.
func (p *Policy) Fixed() map[string]Decision {
	out := map[string]Decision{}
	if len(p.global) > 0 {
		return out
	}
	for name, rules := range p.groups {
		if len(rules) == 0 && p.configs[name] == nil {
			out[name] = Decision{Action: p.def}
		}
	}
	return out
}

func compile(rules []config.Rule) []rule {
	var out []rule
	for _, r := range rules {
		c := rule{cfg: r, anyMethod: r.Tool == "" && r.URI == "" && r.Prompt == ""}
		glob := func(pattern string) *Glob {
			g, err := CompileGlob(pattern)
			if err != nil && c.broken == nil {
				c.broken = fmt.Errorf("glob %q: %w", pattern, err)
			}
			return &g
		}
		if r.Tool != "" {
			c.tool = glob(r.Tool)
		}
		if r.URI != "" {
			c.uri = glob(r.URI)
		}
		if r.Prompt != "" {
			c.prompt = glob(r.Prompt)
		}
		keys := make([]string, 0, len(r.Args))
		for k := range r.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same order, and so the same errors, every time
		for _, k := range keys {
			a := argMatch{key: k, glob: *glob(r.Args[k])}
			if k != AnyArg {
				a.path = strings.Split(k, ".")
			}
			c.args = append(c.args, a)
		}
		out = append(out, c)
	}
	return out
}

// RuleHidden is the Rule of a Decision for a target the group's deny- or
// allow-list hides: the hub answers it as one that does not exist.
const RuleHidden = "hidden"

// Hidden reports whether g's filters hide a target: a tool or a prompt by
// its name as its server calls it, a resource by its URI or its name, a
// resource template by its URI template or its name. The hub's view and
// `dynamic-mcp policy test` both decide with it.
func Hidden(g *config.Group, method string, names ...string) bool {
	switch method {
	case MethodToolsCall:
		return g.Tools.Hides(names...)
	case MethodPromptsGet:
		return g.Prompts.Hides(names...)
	case MethodResourcesRead, MethodSkillsGet, MethodDirectoryRead:
		return g.Resources.Hides(names...)
	}
	return false
}

// Decide is what the hub decides for req: a target the group hides is
// denied by RuleHidden (the hub never routes to one: it answers as for a
// name that does not exist), anything else as Evaluate has it.
func (p *Policy) Decide(req Request) Decision {
	if g := p.configs[req.Group]; g != nil {
		names := []string{req.Name}
		if req.ResourceName != "" {
			names = append(names, req.ResourceName)
		}
		if Hidden(g, req.Method, names...) {
			return Decision{Action: config.ActionDeny, Rule: RuleHidden, Description: "hidden by the group's " + filterKey(req.Method) + " list"}
		}
	}
	return p.Evaluate(req)
}

func filterKey(method string) string {
	switch method {
	case MethodPromptsGet:
		return "prompts"
	case MethodResourcesRead, MethodSkillsGet, MethodDirectoryRead:
		return "resources"
	}
	return "tools"
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
	args := &lazyArgs{raw: req.Args}
	if len(req.Args) > 0 && !bytes.Equal(req.Args, []byte("null")) && !json.Valid(req.Args) {
		// Read now, as a decoder reads its first value: what is not JSON
		// is denied before any rule, in the decoder's words.
		if _, err := args.value(); err != nil {
			return Decision{Action: config.ActionDeny, Description: "policy evaluation failed: " + err.Error()}
		}
	}
	for i, rules := range [][]rule{p.groups[req.Group], p.global} {
		for _, r := range rules {
			ok, err := r.matches(req, args)
			if err != nil {
				return Decision{Action: config.ActionDeny, Rule: r.cfg.Name, Description: fmt.Sprintf("policy evaluation failed in rule %s: %v", r.cfg.Name, err)}
			}
			if ok {
				d := Decision{Action: r.cfg.Action, Rule: r.cfg.Name, Description: r.cfg.Description, Rate: r.cfg.Rate}
				if i == 0 {
					d.RuleGroup = req.Group
				}
				return d
			}
		}
	}
	return Decision{Action: p.def}
}

// lazyArgs are a call's arguments, decoded the first time a rule reads
// them: most rules name no argument, and a call that no rule with args
// reaches is not decoded at all (issue 33: the decode was a tenth of
// what a call through the hub allocated, and each call's garbage brings
// the next collection nearer).
type lazyArgs struct {
	raw  json.RawMessage
	v    any
	err  error
	done bool
}

// value is the arguments decoded (numbers as json.Number), nil for none.
func (a *lazyArgs) value() (any, error) {
	if !a.done {
		a.done = true
		if len(a.raw) > 0 && !bytes.Equal(a.raw, []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(a.raw))
			dec.UseNumber()
			if err := dec.Decode(&a.v); err != nil {
				a.v, a.err = nil, fmt.Errorf("arguments are not JSON: %w", err)
			}
		}
	}
	return a.v, a.err
}

func (r *rule) matches(req Request, lazy *lazyArgs) (bool, error) {
	if r.broken != nil {
		return false, r.broken
	}
	if r.cfg.Server != "" && r.cfg.Server != req.Server && r.cfg.Server != req.Group+"/"+req.Server {
		return false, nil
	}
	if r.anyMethod {
		return true, nil
	}
	switch req.Method {
	case MethodToolsCall:
		if r.tool == nil || !r.tool.Match(req.Name) {
			return false, nil
		}
		for _, a := range r.args {
			args, err := lazy.value()
			if err != nil {
				return false, err
			}
			ok, err := a.matches(args, r.cfg.Action == config.ActionAllow)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case MethodResourcesRead, MethodSkillsGet, MethodDirectoryRead:
		return r.uri != nil && r.uri.Match(req.Name), nil
	case MethodPromptsGet:
		return r.prompt != nil && r.prompt.Match(req.Name), nil
	}
	return false, fmt.Errorf("unknown method %q", req.Method)
}

// matches reports whether the arguments at a's path match its glob. Keys
// match without regard to case, as Go's encoding/json and many other
// decoders take them, so every key that folds to the one named counts.
// Where several values count (keys differing in case, a list, AnyArg), an
// allow rule matches only if every value does, and any other rule if one
// does: either way, the stricter reading.
func (a argMatch) matches(args any, all bool) (bool, error) {
	var values []any
	if a.path == nil {
		values = leaves(args, nil)
	} else {
		var err error
		if values, err = a.lookup(args); err != nil {
			return false, err
		}
	}
	if len(values) == 0 {
		return false, nil
	}
	for _, v := range values {
		if a.matchValue(v, all) != all {
			return !all, nil
		}
	}
	return all, nil
}

// lookup is every value at a's path, the elements of a list counting one
// by one.
func (a argMatch) lookup(args any) ([]any, error) {
	level := []any{args}
	for _, key := range a.path {
		var next []any
		for len(level) > 0 {
			v := level[0]
			level = level[1:]
			if list, ok := v.([]any); ok {
				level = append(level, list...) // a list of objects: each counts
				continue
			}
			obj, ok := v.(map[string]any)
			if !ok {
				if v == nil {
					continue
				}
				return nil, fmt.Errorf("argument %s is not an object", a.key)
			}
			for k, x := range obj {
				if strings.EqualFold(k, key) {
					next = append(next, x)
				}
			}
		}
		level = next
	}
	var out []any
	for _, v := range level {
		if list, ok := v.([]any); ok {
			out = append(out, list...)
		} else {
			out = append(out, v)
		}
	}
	return out, nil
}

// leaves appends every value in v that is not an object or a list, at any
// depth.
func leaves(v any, out []any) []any {
	switch x := v.(type) {
	case map[string]any:
		for _, el := range x {
			out = leaves(el, out)
		}
	case []any:
		for _, el := range x {
			out = leaves(el, out)
		}
	default:
		out = append(out, v)
	}
	return out
}

func (a argMatch) matchValue(v any, all bool) bool {
	switch x := v.(type) {
	case string:
		if all {
			return a.glob.MatchAll(x)
		}
		return a.glob.MatchAny(x)
	case json.Number:
		return a.glob.Match(x.String())
	case bool:
		return a.glob.Match(fmt.Sprint(x))
	case nil:
		return a.glob.Match("null")
	}
	return false // an object has no text to match
}
