package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"
)

// Each mistake is reported once, at its own line, and says what to do.
func TestParseExplainsMistakes(t *testing.T) {
	const group = "groups:\n  a: {description: x, command: y}\n"
	for _, tc := range []struct{ name, src, want string }{
		// An unknown key close to a known one says which.
		{"misspelt root key", "setings: {call_timeout: 1s}\n" + group, `config:1: setings: unknown key; did you mean "settings"?`},
		{"misspelt setting", "settings: {call_timout: 1s}\n" + group, `settings.call_timout: unknown key; did you mean "call_timeout"?`},
		{"camel case", "settings: {connectTimeout: 1s}\n" + group, `did you mean "connect_timeout"?`},
		{"swapped letters", "mdoe: flat\n" + group, `mdoe: unknown key; did you mean "mode"?`},
		{"misspelt command", "groups:\n  a: {description: x, comand: y}", `groups.a.comand: unknown key; did you mean "command"?`},
		{"misspelt description", "groups:\n  a: {descripton: x, command: y}", `did you mean "description"?`},
		{"misspelt servers", "groups:\n  a:\n    description: x\n    server: {b: {command: y}}", `config:4: groups.a.server: unknown key; did you mean "servers"?`},
		{"misspelt action", "policy: [{actoin: deny}]\n" + group, `policy[0].actoin: unknown key; did you mean "action"?`},
		{"misspelt groups", "group:\n  a: {description: x, command: y}", `group: unknown key; did you mean "groups"?`},
		{"nothing close", "colour: blue\n" + group, "config:1: colour: unknown key"},
		// A YAML syntax error names the line it is on.
		{"syntax on line 1", "mode: @flat\n" + group, "config:1: invalid YAML: found character that cannot start any token"},
		{"unclosed flow map", "mode: flat\ngroups:\n  a: {description: x\n  b: 1\n", "config:3: invalid YAML: did not find expected ',' or '}'"},
		{"unclosed flow list", "mode: flat\ngroups:\n  a:\n    description: x\n    command: y\n    args: [a, b\n", "config:6: invalid YAML:"},
		{"colon in a value", "mode: flat\ngroups:\n  a:\n    description: x: y\n    command: y\n", `config:4: invalid YAML: mapping values are not allowed in this context (quote a value that holds ": ", or check the indentation)`},
		{"tab", "groups:\n  a:\n\tdescription: x\n", "config:3: invalid YAML: found character that cannot start any token (indent with spaces: YAML does not allow tabs there)"},
		// An indentation mistake says to check the indentation, at its line.
		{"key indented too little", "groups:\n  a:\n    description: x\n   command: y\n", "config:4: invalid YAML: did not find expected key (check the indentation: the keys of one map, and the items of one list, start in the same column)"},
		{"list item indented too little", "groups:\n  a:\n    description: x\n    command: y\n    args:\n      - a\n     - b\n", "config:7: invalid YAML: did not find expected key (check the indentation:"},
		{"group indented too little", "groups:\n  a:\n    description: x\n    command: y\n b:\n    description: z\n", "config:5: invalid YAML: did not find expected key (check the indentation:"},
		{"tab after spaces", "groups:\n  a:\n    description: x\n  \tcommand: y\n", "config:4: invalid YAML: found a tab character that violates indentation (indent with spaces: YAML does not allow tabs there)"},
		{"tab alone", "groups:\n  a:\n    description: x\n\tcommand: y\n", "config:4: invalid YAML: found a tab character that violates indentation (indent with spaces: YAML does not allow tabs there)"},
		{"unknown anchor", "mode: flat\ngroups: *g\n", "config:2: invalid YAML: unknown anchor 'g' referenced"},
		{"unterminated quote", "mode: flat\ngroups:\n  a:\n    description: \"x\n    command: y\n", "config:4: invalid YAML: found unexpected end of stream"},
		// A bad URL is reported at its own line.
		{"bad url", "groups:\n  a:\n    description: x\n    url: ftp://x\n", `config:4: groups.a.url: must be an http:// or https:// URL, not "ftp://x"`},
		{"bad url in servers", "groups:\n  a:\n    description: x\n    servers:\n      s:\n        url: example.com/mcp\n", `config:6: groups.a.servers.s.url: must be an http:// or https:// URL`},
		{"no host", "groups:\n  a:\n    description: x\n    url: 'https://'\n", `config:4: groups.a.url: must be an http:// or https:// URL`},
		// Keys that do not apply are reported where they are.
		{"headers on a process", "groups:\n  a:\n    description: x\n    command: y\n    headers: {A: b}\n", "config:5: groups.a.headers: only applies to url: servers"},
		{"cwd on a url", "groups:\n  a:\n    description: x\n    url: https://h/mcp\n    cwd: /tmp\n", "config:5: groups.a.cwd: only applies to command: servers"},
		{"rule for an unknown server", "groups:\n  a:\n    description: x\n    command: y\n    policy:\n      - action: deny\n        server: zz\n", `config:7: groups.a.policy[0].server: names "zz"`},
		// One mistake, one message.
		{"bad action", "policy: [{action: maybe}]\n" + group, `policy[0].action: must be allow, deny, log or prompt, not "maybe"`},
		{"mode not a string", "mode: [flat]\n" + group, "mode: must be a string"},
		{"unset variable in a choice", "mode: ${DMCP_TEST_UNSET}\n" + group, "DMCP_TEST_UNSET is not set"},
		{"unset variable in a duration", "settings: {call_timeout: '${DMCP_TEST_UNSET}'}\n" + group, "DMCP_TEST_UNSET is not set"},
		{"size not a string", "settings: {max_message_size: [1]}\n" + group, "settings.max_message_size: must be a string"},
		{"description not a string", "groups:\n  a: {description: [x], command: y}", "groups.a.description: must be a string"},
		{"command not a string", "groups:\n  a: {description: x, command: [y]}", "groups.a.command: must be a string"},
		{"empty command", "groups:\n  a: {description: x, command: ''}", "groups.a.command: is empty"},
		{"unset variable in http", "http: {token: '${DMCP_TEST_UNSET}'}\ngroups:\n  a: {description: x, url: 'https://h'}", "DMCP_TEST_UNSET is not set"},
		{"transport not a string", "groups:\n  a: {description: x, url: 'http://h', transport: [sse]}", "groups.a.transport: must be a string"},
		{"server not a map", "groups:\n  a:\n    description: x\n    servers: {s: npx}\n", "config:4: groups.a.servers.s: must be a map with command: or url:"},
		{"tool not a string", "groups:\n  a: {description: x, command: y, policy: [{action: deny, tool: [t], args: {p: x}}]}", "policy[0].tool: must be a string"},
		{"group twice", "groups:\n  a: {description: x, command: y}\n  a: {description: z, command: y}\n", "config:3: groups.a: appears twice"},
		{"server twice", "groups:\n  a:\n    description: x\n    servers:\n      s: {command: y}\n      s: {command: z}\n", "config:6: groups.a.servers.s: appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("", strings.NewReader(tc.src))
			var merr *multierror.Error
			if !errors.As(err, &merr) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
			if len(merr.Errors) != 1 || !strings.Contains(merr.Errors[0].Error(), tc.want) {
				t.Errorf("want one error containing %q, got:\n%s", tc.want, err)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	known := []string{"settings", "groups", "mode", "policy", "policy_default", "url", "args", "env", "cwd", "command"}
	// "type" means transport, which is not among these keys: no guess.
	for key, want := range map[string]string{
		"setings":        "settings",
		"Settings":       "settings",
		"SETTINGS":       "settings",
		"settigns":       "settings",
		"policyDefault":  "policy_default",
		"policy-default": "policy_default",
		"uri":            "url",
		"arg":            "args",
		"envs":           "env",
		"comand":         "command",
		"cmd":            "command",
		"workingDir":     "cwd",
		"type":           "",
		"colour":         "",
		"x":              "",
		"servers":        "",
		"policies":       "",
	} {
		if got := nearest(key, known); got != want {
			t.Errorf("nearest(%q) = %q, want %q", key, got, want)
		}
	}
}

// A syntax error found in a long file still names its line.
func TestSyntaxErrorLineInALongFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("groups:\n")
	for i := range 300 {
		b.WriteString("  g" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": {description: x, command: y}\n")
	}
	b.WriteString("  broken: {description: x, command: y\n")
	_, err := Parse("long.yaml", strings.NewReader(b.String()))
	if err == nil || !strings.Contains(err.Error(), "long.yaml:302: invalid YAML") {
		t.Fatalf("got %v", err)
	}
}
