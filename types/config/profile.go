package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Profile is one client's view of the hub: the groups it shows and how.
// A group the profile leaves out is hidden from that client everywhere,
// as a deny-list hides a tool: not listed, not searched, and a call to
// one of its tools is refused as unknown, in both modes.
type Profile struct {
	Name string
	// Groups the client sees, in config order (not the profile's).
	Groups []string
	// Mode, when set, replaces the config's mode for this client.
	Mode Mode
	// Search, when set, replaces settings.search for this client.
	Search SearchMode
	// Expose, when set for a group, replaces that group's expose: list.
	Expose map[string][]string
	// MaxTools, when above zero, replaces settings.max_tools.
	MaxTools int
	// MaxResult, when not zero, replaces settings.max_result (a clients:
	// rule's replaces it in turn): a cap in bytes, or MaxResultOff for
	// none.
	MaxResult int
	// Cooperative, when set, replaces settings.cooperative.
	Cooperative Switch
	// Line is where the profile starts in the file.
	Line int
}

// profiles reads the profiles: map; groups are checked once all are read.
func (p *parser) profiles(n *yaml.Node, path string) map[string]*Profile {
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "must be a map of profile name to profile")
		return nil
	}
	out := map[string]*Profile{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, v := n.Content[i].Value, n.Content[i+1]
		key := path + "." + name
		if _, dup := out[name]; dup {
			p.fail(n.Content[i], key, "appears twice: profile names are unique")
			continue
		}
		if !namePattern().MatchString(name) {
			p.fail(n.Content[i], key, "profile name must be 1-64 characters of A-Z a-z 0-9 _ . -")
		}
		pr := &Profile{Name: name, Line: n.Content[i].Line}
		p.mapping(v, key, map[string]func(string, *yaml.Node){
			"groups": func(k string, v *yaml.Node) { pr.Groups = p.strings(v, k) },
			"mode":   func(k string, v *yaml.Node) { choose(p, v, k, &pr.Mode, ModeDynamic, ModeFlat, ModeAuto) },
			"search": func(k string, v *yaml.Node) { choose(p, v, k, &pr.Search, SearchAuto, SearchOn, SearchOff) },
			"expose": func(k string, v *yaml.Node) {
				if v.Kind != yaml.MappingNode {
					p.fail(v, k, "must be a map of group name to a list of its tools")
					return
				}
				pr.Expose = map[string][]string{}
				for j := 0; j+1 < len(v.Content); j += 2 {
					pr.Expose[v.Content[j].Value] = p.strings(v.Content[j+1], k+"."+v.Content[j].Value)
				}
			},
			"max_tools":   func(k string, v *yaml.Node) { p.positive(v, k, &pr.MaxTools) },
			"max_result":  func(k string, v *yaml.Node) { pr.MaxResult = p.maxResult(v, k, true) },
			"cooperative": func(k string, v *yaml.Node) { choose(p, v, k, &pr.Cooperative, SwitchOn, SwitchOff) },
		})
		if findKey(v, "groups") == nil {
			p.fail(n.Content[i], key+".groups", "is required: list the groups this profile shows")
		}
		out[name] = pr
	}
	return out
}

// checkProfiles reports a profile that names a group the config does not
// have, or exposes tools of a group it does not show.
func (p *parser) checkProfiles(cfg *Config) {
	for _, name := range cfg.ProfileNames() {
		pr := cfg.Profiles[name]
		key := "profiles." + name
		for _, g := range pr.Groups {
			if cfg.group(g) == nil {
				p.fail(&yaml.Node{Line: pr.Line}, key+".groups", "names group %q, which the config does not have (groups: %s)", g, groupNames(cfg))
			}
		}
		for g := range pr.Expose {
			if !slices.Contains(pr.Groups, g) {
				p.fail(&yaml.Node{Line: pr.Line}, key+".expose."+g, "names a group the profile does not show")
			}
		}
	}
	for i, r := range cfg.Clients {
		if r.Profile != "" && cfg.Profiles[r.Profile] == nil {
			p.fail(&yaml.Node{Line: r.Line}, fmt.Sprintf("clients[%d].profile", i), "names profile %q, which the config does not have (profiles: %s)",
				r.Profile, strings.Join(cfg.ProfileNames(), ", "))
		}
	}
}

// ProfileForClient is the profile a clients: rule gives the client named
// name on stdio ("" for none).
func (c *Config) ProfileForClient(name string) string {
	if _, r := c.ClientRuleFor(name); r != nil {
		return r.Profile
	}
	return ""
}

// ProfileNames are the config's profiles, sorted.
func (c *Config) ProfileNames() []string {
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Config) group(name string) *Group {
	for _, g := range c.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

func groupNames(c *Config) string {
	var s string
	for i, g := range c.Groups {
		if i > 0 {
			s += ", "
		}
		s += g.Name
	}
	return s
}

// WithProfile is the config as the profile name shows it: only its groups
// (so the rest are neither started nor reachable), with its mode, search,
// expose lists and tool cap in place of the config's. An empty name is
// the config itself.
func (c *Config) WithProfile(name string) (*Config, error) {
	if name == "" {
		return c, nil
	}
	pr, ok := c.Profiles[name]
	if !ok {
		if len(c.Profiles) == 0 {
			return nil, fmt.Errorf("profile %q: the config has no profiles", name)
		}
		return nil, fmt.Errorf("profile %q is not in the config (profiles: %v)", name, c.ProfileNames())
	}
	out := *c
	out.Profile = name
	out.Groups = nil
	for _, g := range c.Groups {
		if !slices.Contains(pr.Groups, g.Name) {
			continue
		}
		if expose, ok := pr.Expose[g.Name]; ok {
			cp := *g
			cp.Expose = expose
			g = &cp
		}
		out.Groups = append(out.Groups, g)
	}
	if pr.Mode != "" {
		out.Mode = pr.Mode
	}
	if pr.Search != "" {
		out.Settings.Search = pr.Search
	}
	if pr.MaxTools > 0 {
		out.Settings.MaxTools = pr.MaxTools
	}
	if pr.MaxResult != 0 {
		out.Settings.MaxResult = max(pr.MaxResult, 0)
	}
	if pr.Cooperative != "" {
		out.Settings.Cooperative = pr.Cooperative
	}
	return &out, nil
}
