package cooperative

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// intentAnswer is checkIntent's answer: the seed's keys (allowed,
// risk_level, explanation, policy_rule, suggestions) and the hub's.
type intentAnswer struct {
	Allowed     bool     `json:"allowed"`
	RiskLevel   string   `json:"risk_level"`
	Explanation string   `json:"explanation"`
	PolicyRule  string   `json:"policy_rule"` // the decision: allow, log, deny, prompt, or not_found
	Suggestions []string `json:"suggestions,omitempty"`
	// Rule is the rule that decided, "" for the policy's default.
	Rule string `json:"rule,omitempty"`
	// NeedsApproval says a person decides (a prompt rule): the call asks
	// them, or requestPermission does first.
	NeedsApproval bool   `json:"needs_approval,omitempty"`
	Grant         string `json:"grant,omitempty"` // the grant that lets the call through
	// Rate is the rule's rate limit: a call over it is refused (or asked)
	// whatever this answer says.
	Rate string `json:"rate,omitempty"`
}

// decisionNotFound is policy_rule for a target the client cannot see:
// hidden and absent alike, as a real call answers both.
const decisionNotFound = "not_found"

// readTarget reads the arguments of tool, the keys required among them,
// and the call they name (the resource read uri names, if any), then
// audits tool's use: the start of checkIntent and requestPermission.
func readTarget(h Host, args []byte, tool string, uri func(input) string, required ...string) (input, Target, error) {
	in, err := read(args, required...)
	if err != nil {
		return in, Target{}, err
	}
	t, err := in.target(uri(in))
	if err != nil {
		return in, Target{}, err
	}
	if err := audited(h, tool); err != nil {
		return in, Target{}, err
	}
	return in, t, nil
}

// intentURI and permissionURI are the resource a read names: checkIntent's
// target of action_type resource_access, requestPermission's resource of
// operation read; "" for any other.
func (in input) intentURI() string {
	if in.ActionType == "resource_access" {
		return in.Target
	}
	return ""
}

func (in input) permissionURI() string {
	if in.Operation == "read" {
		return in.Resource
	}
	return ""
}

func checkIntent(h Host, args []byte) (any, error) {
	_, t, err := readTarget(h, args, CheckIntent, input.intentURI, "description", "action_type", "target")
	if err != nil {
		return nil, err
	}
	return intentOf(t, h.Decide(t)), nil
}

// intentOf words v, the verdict on t.
func intentOf(t Target, v Verdict) intentAnswer {
	a := intentAnswer{Allowed: v.allowed(), Rule: v.Rule, Grant: v.Grant, PolicyRule: string(v.Action)}
	if v.Rate != nil {
		a.Rate = v.Rate.Text
	}
	by := "the policy's default"
	if v.Rule != "" {
		by = "rule " + v.Rule
	}
	switch {
	case !v.Found:
		a.PolicyRule, a.RiskLevel = decisionNotFound, "High"
		a.Explanation = fmt.Sprintf("Action blocked: %s is not available to you.", t)
		a.Suggestions = []string{"List your tools (or, in dynamic mode, the group's with get_dynamic_tools) and use one of those."}
	case a.Allowed && v.Grant != "":
		a.RiskLevel = "Medium"
		a.Explanation = fmt.Sprintf("Action allowed: %s is let through by grant %s (%s asks a person).", t, v.Grant, by)
	case a.Allowed:
		a.RiskLevel = "Low"
		a.Explanation = fmt.Sprintf("Action allowed: %s is permitted by %s.", t, by)
	case v.Action == config.ActionPrompt:
		a.RiskLevel, a.NeedsApproval = "Medium", true
		a.Explanation = fmt.Sprintf("Action needs approval: %s asks a person before %s goes ahead%s.", by, t, suffix(v.Description))
		a.Suggestions = []string{"Call requestPermission for it first, or make the call and a person will be asked."}
	default:
		a.RiskLevel = "High"
		a.Explanation = fmt.Sprintf("Action blocked: %s is not permitted by %s%s.", t, by, suffix(v.Description))
		a.Suggestions = []string{cmp.Or(v.Description, "Choose another action: a person cannot approve what a deny rule forbids.")}
	}
	return a
}

func suffix(desc string) string {
	if desc == "" {
		return ""
	}
	return ": " + desc
}

// permissionAnswer is requestPermission's answer: the seed's keys
// (granted, scope, expires_at) and the hub's.
type permissionAnswer struct {
	Granted bool `json:"granted"`
	// Scope is what the permission covers: session or once (a grant made
	// now), policy (the policy allows the call: no grant needed), grant
	// (a grant made before covers it), or none.
	Scope       string  `json:"scope"`
	ExpiresAt   *string `json:"expires_at"`
	Grant       string  `json:"grant,omitempty"`
	ApprovedBy  string  `json:"approved_by,omitempty"`
	Rule        string  `json:"rule,omitempty"`
	Explanation string  `json:"explanation"`
}

// maxWhy bounds each text of the agent's that the person is shown.
const maxWhy = 512

// defaultTimeoutSeconds is how long requestPermission waits for the
// person's answer when the call does not say: the seed's default.
const defaultTimeoutSeconds = 30

func requestPermission(ctx context.Context, h Host, args []byte) (any, error) {
	in, t, err := readTarget(h, args, RequestPermission, input.permissionURI, "resource", "operation", "justification")
	if err != nil {
		return nil, err
	}
	v := h.Decide(t)
	a := permissionAnswer{Scope: "none", Rule: v.Rule}
	switch {
	case !v.Found:
		a.Explanation = intentOf(t, v).Explanation
		return a, nil
	case v.allowed():
		a.Granted, a.Grant = true, v.Grant
		a.Scope = "policy"
		if v.Grant != "" {
			a.Scope = "grant"
		}
		a.Explanation = intentOf(t, v).Explanation
		return a, nil
	case v.Action != config.ActionPrompt:
		a.Explanation = intentOf(t, v).Explanation + " A person cannot approve what a deny rule forbids."
		return a, nil
	}
	ask := Ask{Scope: cmp.Or(in.Scope, ScopeSession), Expires: time.Duration(in.ExpiresInSeconds) * time.Second, Wait: defaultTimeoutSeconds * time.Second}
	if in.TimeoutSeconds != nil {
		ask.Wait = time.Duration(max(*in.TimeoutSeconds, 1)) * time.Second
	}
	// What the agent wrote reaches a person: bounded, and said to be its.
	ask.Why = fmt.Sprintf("The agent asks permission (%s %s) for %s, for %s, saying: %s", in.Operation, clip.Marked(in.Resource, maxWhy, "…"),
		clip.Marked(t.String(), maxWhy, "…"), scopeText(ask), clip.Marked(in.Justification, maxWhy, "…"))
	g, err := h.Ask(ctx, t, v, ask)
	if err != nil {
		return nil, err
	}
	if g.ID == "" {
		a.Explanation = "Not granted: " + cmp.Or(g.Refused, "refused")
		return a, nil
	}
	a.Granted, a.Scope, a.Grant, a.ApprovedBy = true, ask.Scope, g.ID, g.ApprovedBy
	if !g.Expires.IsZero() {
		s := g.Expires.UTC().Format(time.RFC3339)
		a.ExpiresAt = &s
	}
	a.Explanation = fmt.Sprintf("Granted by %s: grant %s lets %s through for %s.", cmp.Or(g.ApprovedBy, "a person"), g.ID, t, scopeText(ask))
	return a, nil
}

// scopeText says what a grant asked for covers.
func scopeText(a Ask) string {
	s := "this session"
	if a.Scope == ScopeOnce {
		s = "one call"
	}
	if a.Expires > 0 {
		s += fmt.Sprintf(", at most %s", a.Expires)
	}
	return s
}
