package config

import (
	"slices"
	"strings"
	"testing"
)

// settings.search takes auto (the default), on or off; a group's expose is
// a list of tool names, none by default.
func TestParseSearchAndExpose(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		search     SearchMode
		expose     []string
		wantErrors string
	}{
		{name: "defaults", src: "groups:\n  a: {description: x, command: y}", search: SearchAuto},
		{name: "on", src: "settings: {search: on}\ngroups:\n  a: {description: x, command: y}", search: SearchOn},
		{name: "off", src: "settings: {search: 'off'}\ngroups:\n  a: {description: x, command: y}", search: SearchOff},
		{name: "expose", src: "groups:\n  a: {description: x, command: y, expose: [read_file, a__b]}", search: SearchAuto, expose: []string{"read_file", "a__b"}},
		{name: "bad search", src: "settings: {search: maybe}\ngroups:\n  a: {description: x, command: y}",
			wantErrors: `config:1: settings.search: must be auto, on or off, not "maybe"`},
		{name: "search as a bool", src: "settings: {search: true}\ngroups:\n  a: {description: x, command: y}",
			wantErrors: `settings.search: must be auto, on or off, not "true"`},
		{name: "expose not a list", src: "groups:\n  a: {description: x, command: y, expose: read_file}",
			wantErrors: "config:2: groups.a.expose: must be a list of strings"},
		{name: "expose of maps", src: "groups:\n  a:\n    description: x\n    command: y\n    expose:\n      - {name: read_file}",
			wantErrors: "config:6: groups.a.expose[0]: must be a string"},
		{name: "misspelt", src: "groups:\n  a: {description: x, command: y, exposed: [read_file]}",
			wantErrors: `groups.a.exposed: unknown key; did you mean "expose"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("", strings.NewReader(tc.src))
			if tc.wantErrors != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrors) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErrors, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Settings.Search != tc.search || !slices.Equal(cfg.Groups[0].Expose, tc.expose) {
				t.Errorf("search %q expose %q, want %q and %q", cfg.Settings.Search, cfg.Groups[0].Expose, tc.search, tc.expose)
			}
		})
	}
}
