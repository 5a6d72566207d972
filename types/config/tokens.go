package config

import (
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// tokens reads http.tokens: a map of credential name -> token, each token
// a string with ${VAR} substituted.
func (p *parser) tokens(n *yaml.Node, key string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.fail(n, key, "must be a map of name: token")
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		switch {
		case strings.TrimSpace(name) == "":
			p.fail(k, key, "a credential's name must not be empty")
			continue
		case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
			p.fail(k, key, "a credential's name must not contain control characters")
			continue
		case strings.HasPrefix(name, "jwt:"):
			p.fail(k, key, "a credential's name must not begin with jwt:, which names the callers of http.auth")
			continue
		}
		if _, dup := out[name]; dup {
			p.fail(k, key+"."+name, "appears twice")
			continue
		}
		t, ok := p.strOK(v, key+"."+name)
		if !ok {
			continue
		}
		if len(t) < MinTokenBytes {
			p.fail(v, key+"."+name, "must be at least %d bytes long, not %d", MinTokenBytes, len(t))
			continue
		}
		out[name] = t
	}
	return out
}

// checkTokens reports a token used by two credentials (each must tell its
// client apart), and a credential of http.tokens named like http.token's.
func (p *parser) checkTokens(n *yaml.Node, key string, h HTTP) {
	if _, ok := h.Tokens[DefaultCredential]; ok && h.Token != "" {
		p.fail(findKey(n, "tokens"), key+".tokens."+DefaultCredential, "is http.token's credential: name it otherwise, or drop http.token")
	}
	owner := map[string]string{}
	if h.Token != "" {
		owner[h.Token] = key + ".token"
	}
	for _, name := range slices.Sorted(maps.Keys(h.Tokens)) {
		t := h.Tokens[name]
		if other, dup := owner[t]; dup {
			p.fail(findKey(n, "tokens"), key+".tokens."+name, "is the same token as %s: each credential needs its own", other)
			continue
		}
		owner[t] = key + ".tokens." + name
	}
}
