package main

import (
	"reflect"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// httpAuthChanged reports whether a reload changed http.auth, which the
// HTTP face reads at start only (its guard, verifier and metadata are
// built once): the hub warns that a restart is needed. Where in the file
// the keys are does not count.
func httpAuthChanged(old, new *config.HTTPAuth) bool {
	return !reflect.DeepEqual(withoutLines(old), withoutLines(new))
}

func withoutLines(a *config.HTTPAuth) *config.HTTPAuth {
	if a == nil {
		return nil
	}
	c := *a
	c.Line = 0
	c.Profiles = nil
	for _, p := range a.Profiles {
		p.Line = 0
		c.Profiles = append(c.Profiles, p)
	}
	if a.Introspection != nil {
		in := *a.Introspection
		in.Line = 0
		c.Introspection = &in
	}
	return &c
}
