package config

import (
	"slices"
	"strings"
	"testing"
)

const profileGroups = "groups:\n  a: {description: x, command: y}\n  b: {description: x, command: y}\n  c: {description: x, command: y, expose: [t]}\n"

// A profile names groups the config has; its mode, search, expose and
// max_tools replace the config's for the client that chooses it.
func TestParseProfiles(t *testing.T) {
	src := profileGroups + "profiles:\n  cursor: {groups: [c, a], mode: flat, search: 'off', max_tools: 40, expose: {c: [u, v]}}\n  all: {groups: [a, b, c]}\n"
	cfg, err := Parse("", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ProfileNames(); !slices.Equal(got, []string{"all", "cursor"}) {
		t.Fatalf("profiles %v", got)
	}
	withRule, err := Parse("", strings.NewReader(src+"clients:\n  - {match: 'Cursor*', profile: cursor}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, none := withRule.ProfileForClient("cursor-vscode"), withRule.ProfileForClient("claude-code"); got != "cursor" || none != "" {
		t.Errorf("ProfileForClient: %q and %q, want cursor and none", got, none)
	}
	v, err := cfg.WithProfile("cursor")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range v.Groups {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{"a", "c"}) { // config order
		t.Errorf("groups %v, want [a c]", names)
	}
	if v.Mode != ModeFlat || v.Settings.Search != SearchOff || v.Settings.MaxTools != 40 || v.Profile != "cursor" {
		t.Errorf("mode %s search %s max %d profile %q", v.Mode, v.Settings.Search, v.Settings.MaxTools, v.Profile)
	}
	if !slices.Equal(v.Groups[1].Expose, []string{"u", "v"}) || !slices.Equal(cfg.Groups[2].Expose, []string{"t"}) {
		t.Errorf("expose %v (config's %v)", v.Groups[1].Expose, cfg.Groups[2].Expose)
	}
	all, _ := cfg.WithProfile("all")
	if all.Mode != ModeDynamic || all.Settings.Search != SearchAuto || all.Settings.MaxTools != 0 || len(all.Groups) != 3 {
		t.Errorf("profile all changed what it does not set: %+v", all.Settings)
	}
	if _, err := cfg.WithProfile("nope"); err == nil || !strings.Contains(err.Error(), `profile "nope" is not in the config (profiles: [all cursor])`) {
		t.Errorf("unknown profile: %v", err)
	}
	if same, _ := cfg.WithProfile(""); same != cfg {
		t.Error("no profile is not the config itself")
	}
}

func TestParseProfileErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown group", "profiles:\n  p: {groups: [a, zz]}\n", `config:6: profiles.p.groups: names group "zz", which the config does not have (groups: a, b, c)`},
		{"no groups", "profiles:\n  p: {mode: flat}\n", "profiles.p.groups: is required"},
		{"bad mode", "profiles:\n  p: {groups: [a], mode: lazy}\n", `profiles.p.mode: must be dynamic, flat or auto, not "lazy"`},
		{"bad cap", "profiles:\n  p: {groups: [a], max_tools: 0}\n", "profiles.p.max_tools: must be above zero"},
		{"expose of a hidden group", "profiles:\n  p: {groups: [a], expose: {b: [t]}}\n", "profiles.p.expose.b: names a group the profile does not show"},
		{"misspelt", "profiles:\n  p: {group: [a]}\n", `profiles.p.group: unknown key; did you mean "groups"?`},
		{"bad cap in settings", "settings: {max_tools: -1}\n", "settings.max_tools: must be above zero"},
		{"client rule of an unknown profile", "profiles:\n  p: {groups: [a]}\nclients:\n  - {match: 'cursor*', profile: q}\n", `clients[0].profile: names profile "q", which the config does not have (profiles: p)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("", strings.NewReader(profileGroups+tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// clients: rules match the client's name case-insensitively, first match
// wins; a bad glob, a missing match or an unknown shaping is an error.
func TestParseClients(t *testing.T) {
	cfg, err := Parse("", strings.NewReader(profileGroups+"clients:\n  - {match: 'cursor*', max_tools: 40}\n  - {match: '*gemini*', schemas: gemini}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"Cursor-VSCode": 0, "gemini-cli-mcp-client": 1, "claude-code": -1} {
		if i, _ := cfg.ClientRuleFor(name); i != want {
			t.Errorf("%s: rule %d, want %d", name, i, want)
		}
	}
	if cfg.Clients[0].MaxTools != 40 || cfg.Clients[1].Schemas != SchemasGemini {
		t.Errorf("rules %+v", cfg.Clients)
	}
	for src, want := range map[string]string{
		"clients:\n  - {match: '[x'}\n":               "clients[0].match: is not a valid glob",
		"clients:\n  - {max_tools: 3}\n":              "clients[0].match: is required",
		"clients:\n  - {match: x, schemas: openai}\n": `clients[0].schemas: must be gemini (the only shaping there is), not "openai"`,
	} {
		if _, err := Parse("", strings.NewReader(profileGroups+src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", src, want, err)
		}
	}
}
