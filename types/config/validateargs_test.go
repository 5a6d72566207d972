package config

import (
	"strings"
	"testing"
)

// settings.validate_args is on by default and may be turned off; a
// group's validate_args overrides it either way.
func TestParseValidateArgs(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		setting    Switch
		validates  bool // for group a
		wantErrors string
	}{
		{name: "default", src: "groups:\n  a: {description: x, command: y}", setting: SwitchOn, validates: true},
		{name: "off", src: "settings: {validate_args: off}\ngroups:\n  a: {description: x, command: y}", setting: SwitchOff},
		{name: "group off", src: "groups:\n  a: {description: x, command: y, validate_args: off}", setting: SwitchOn},
		{name: "group on", src: "settings: {validate_args: 'off'}\ngroups:\n  a: {description: x, command: y, validate_args: on}", setting: SwitchOff, validates: true},
		{name: "bad", src: "settings: {validate_args: maybe}\ngroups:\n  a: {description: x, command: y}",
			wantErrors: `config:1: settings.validate_args: must be on or off, not "maybe"`},
		{name: "bad group", src: "groups:\n  a: {description: x, command: y, validate_args: yes}",
			wantErrors: `groups.a.validate_args: must be on or off, not "yes"`},
		{name: "misspelt", src: "settings: {validate_arg: off}\ngroups:\n  a: {description: x, command: y}",
			wantErrors: `settings.validate_arg: unknown key; did you mean "validate_args"?`},
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
			if got := cfg.Settings.ValidatesArgs(cfg.Groups[0]); cfg.Settings.ValidateArgs != tc.setting || got != tc.validates {
				t.Errorf("validate_args %q, group a validates %v; want %q and %v", cfg.Settings.ValidateArgs, got, tc.setting, tc.validates)
			}
		})
	}
}
