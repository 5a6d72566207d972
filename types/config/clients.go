package config

import (
	"fmt"
	"path"
	"strings"

	"gopkg.in/yaml.v3"
)

// SchemasGemini shapes tool schemas for a Gemini model (see server/shape).
const SchemasGemini = "gemini"

// ApprovalsInbox sends a client's `prompt` calls to the approval inbox.
const ApprovalsInbox = "inbox"

// ClientRule shapes what one kind of client is shown, chosen by the name
// the client gives in clientInfo (on 2026-07-28, in each request's _meta).
type ClientRule struct {
	// Match is a glob (path.Match: * ? [...]) matched against the client's
	// name, case-insensitively.
	Match string
	// MaxTools, when above zero, caps the tools tools/list shows this
	// client (as settings.max_tools does for every client).
	MaxTools int
	// MaxResult, when not zero, replaces settings.max_result for this
	// client (and its profile's): a cap in bytes, or MaxResultOff for
	// none.
	MaxResult int
	// Schemas is "gemini" to rewrite tool schemas to what a Gemini model
	// accepts, "" to leave them as the servers wrote them.
	Schemas string
	// Approvals is "inbox" to put this client's `prompt` calls to the
	// approval inbox even when it declares elicitation, "" to ask it by
	// elicitation where it can. It answers clients that decline every
	// elicitation on their own, with no person asked (Codex declines
	// within 50 ms).
	Approvals string
	// Mode, when set (dynamic or flat), is the mode this client is shown,
	// in place of its profile's and the config's: it overrides what
	// mode: auto would choose, and a named mode too.
	Mode Mode
	// Profile, when set, is the profile (see Profile) a client that
	// matches is shown on stdio, where it started the hub (or joined the
	// shared one) without --profile. Over HTTP a profile is chosen by the
	// URL only (/mcp/p/NAME): under 2026-07-28 the lists of one endpoint
	// must not vary per connection.
	Profile string
	// Line is where the rule is in the file.
	Line int
}

// Matches reports whether the rule is for the client named name.
func (r *ClientRule) Matches(name string) bool {
	ok, _ := path.Match(strings.ToLower(r.Match), strings.ToLower(name))
	return ok
}

// ClientRuleFor is the first rule that matches the client named name, and
// its index in Clients; nil and -1 when none does.
func (c *Config) ClientRuleFor(name string) (int, *ClientRule) {
	for i := range c.Clients {
		if c.Clients[i].Matches(name) {
			return i, &c.Clients[i]
		}
	}
	return -1, nil
}

func (p *parser) clients(n *yaml.Node, key string) []ClientRule {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list of rules, each with match:")
		return nil
	}
	var out []ClientRule
	for i, v := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		r := ClientRule{Line: v.Line}
		p.mapping(v, k, map[string]func(string, *yaml.Node){
			"match": func(k string, v *yaml.Node) {
				r.Match = p.str(v, k)
				if _, err := path.Match(r.Match, ""); err != nil {
					p.fail(v, k, "is not a valid glob: %v", err)
				}
			},
			"max_tools":  func(k string, v *yaml.Node) { p.positive(v, k, &r.MaxTools) },
			"max_result": func(k string, v *yaml.Node) { r.MaxResult = p.maxResult(v, k, true) },
			"schemas": func(k string, v *yaml.Node) {
				if r.Schemas = p.str(v, k); r.Schemas != SchemasGemini {
					p.fail(v, k, "must be gemini (the only shaping there is), not %q", r.Schemas)
				}
			},
			"profile": func(k string, v *yaml.Node) { r.Profile = p.str(v, k) },
			"mode":    func(k string, v *yaml.Node) { choose(p, v, k, &r.Mode, ModeDynamic, ModeFlat) },
			"approvals": func(k string, v *yaml.Node) {
				if r.Approvals = p.str(v, k); r.Approvals != ApprovalsInbox {
					p.fail(v, k, "must be inbox (ask through the approval inbox, not the client), not %q", r.Approvals)
				}
			},
		})
		if findKey(v, "match") == nil {
			p.fail(v, k+".match", "is required: a glob of the client's name (clientInfo.name)")
		}
		out = append(out, r)
	}
	return out
}
