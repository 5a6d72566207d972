package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// unresolved is one ${VAR} or ${secret:NAME} of cfg that is not set: where
// it is, and what waits for it (a group, or one server of a group).
type unresolved struct {
	at    *config.ConfigError
	unset *config.UnsetError
	what  string // "group files", "server web/search"
}

// unresolvedOf lists cfg's unset references in config order, each once
// (a group's key holds up each of its servers with the same one).
func unresolvedOf(cfg *config.Config) []unresolved {
	var out []unresolved
	seen := map[*config.ConfigError]bool{}
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			for _, ce := range s.Unresolved {
				var u *config.UnsetError
				if seen[ce] || !errors.As(ce, &u) {
					continue
				}
				seen[ce] = true
				what := "group " + g.Name
				if len(g.Servers) > 1 && strings.HasPrefix(ce.Key, "groups."+g.Name+".servers."+s.Name+".") {
					what = "server " + s.ID()
				}
				out = append(out, unresolved{at: ce, unset: u, what: what})
			}
		}
	}
	return out
}

// warning is the line validate and install print for u: where it is,
// what waits for it, and the fix.
func (u unresolved) warning() string {
	loc := *u.at
	loc.Err = fmt.Errorf("%s is not set, so %s is unavailable until it is: %s", u.name(), u.what, u.unset.Fix())
	return "warning: " + loc.Error()
}

// name is "environment variable NAME" or "secret NAME".
func (u unresolved) name() string {
	if u.unset.Secret {
		return "secret " + u.unset.Name
	}
	return "environment variable " + u.unset.Name
}

// needs lists, once per name, what cfg needs set before all of it serves,
// with the fix: what import prints after writing a config.
func needs(cfg *config.Config) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range unresolvedOf(cfg) {
		key := u.name()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, fmt.Sprintf("%s (%s): %s", key, u.what, u.unset.Fix()))
	}
	return out
}
