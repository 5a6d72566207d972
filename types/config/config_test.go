package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
)

func TestParseFullConfig(t *testing.T) {
	t.Setenv("DMCP_TEST_KEY", "s3cret")
	src := `
mode: flat
settings:
  call_timeout: 90s
  page_size: 5
  max_message_size: 20MiB
  retry: { attempts: 5, reconnect_interval: 1m }
groups:
  files:
    description: Read files
    command: npx
    args: ["-y", "srv", "${DMCP_TEST_UNSET:-/tmp}"]
    env: { A: "1" }
  web:
    description: Search
    prefix: false
    instructions: false
    servers:
      search: { url: "https://search.example/mcp", headers: { Authorization: "Bearer ${DMCP_TEST_KEY}" } }
      browser: { command: npx, args: ["-y", "@playwright/mcp"], timeout: 120s, retry: { attempts: 2 }, isolation: per-session }
    deny: ["^write_"]
    prompts: { allow: ["^summar"] }
    pin_on_change: warn
    policy:
      - { action: deny, tool: "browser_*", args: { url: "file://**" }, description: "no local files", server: browser }
policy:
  - { name: last, action: log }
policy_default: deny
audit: { path: /tmp/a.jsonl, arguments: true, required: true }
`
	cfg, err := Parse("c.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeFlat || cfg.Settings.CallTimeout != 90*time.Second || cfg.Settings.PageSize != 5 {
		t.Fatalf("settings: %+v mode %s", cfg.Settings, cfg.Mode)
	}
	if cfg.Settings.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("connect timeout default = %v", cfg.Settings.ConnectTimeout)
	}
	if len(cfg.Groups) != 2 || cfg.Groups[0].Name != "files" || cfg.Groups[1].Name != "web" {
		t.Fatalf("groups out of config order: %+v", cfg.Groups)
	}
	files := cfg.Groups[0]
	if web := cfg.Groups[1].Servers; web[0].Isolation != IsolationShared || web[1].Isolation != IsolationPerSession {
		t.Errorf("isolation: %s, %s", web[0].Isolation, web[1].Isolation)
	}
	if !files.Prefix || len(files.Servers) != 1 || files.Servers[0].Name != "files" || files.Servers[0].Transport != TransportStdio {
		t.Fatalf("inline server: %+v", files.Servers[0])
	}
	if got := files.Servers[0].Args[2]; got != "/tmp" {
		t.Errorf("default substitution = %q", got)
	}
	web := cfg.Groups[1]
	if !files.Instructions || web.Instructions {
		t.Errorf("instructions: files %v (default true), web %v (false in the file)", files.Instructions, web.Instructions)
	}
	if web.Prefix || web.Servers[0].Name != "search" || web.Servers[1].Name != "browser" {
		t.Fatalf("servers out of order: %+v", web.Servers)
	}
	if got := web.Servers[0].Headers["Authorization"]; got != "Bearer s3cret" {
		t.Errorf("header = %q", got)
	}
	if web.Servers[0].Transport != "" || web.Servers[0].ID() != "web/search" {
		t.Errorf("url server: %+v", web.Servers[0])
	}
	if got := cfg.CallTimeoutFor(web.Servers[1]); got != 120*time.Second {
		t.Errorf("per-server timeout = %v", got)
	}
	if cfg.Settings.MaxMessageSize != 20<<20 {
		t.Errorf("max_message_size = %d", cfg.Settings.MaxMessageSize)
	}
	want := Retry{Attempts: 2, InitialInterval: time.Second, ReconnectInterval: time.Minute}
	if got := web.Servers[1].Retry; got != want {
		t.Errorf("server retry = %+v, want %+v", got, want)
	}
	if !web.Tools.Hides("write_x") || web.Tools.Hides("read_x") || !web.Prompts.Hides("other") || web.Prompts.Hides("summarize") {
		t.Error("filters do not hide as configured")
	}
	if len(web.Policy) != 1 || web.Policy[0].Name != "web.policy[0]" || web.Policy[0].Args["url"] != "file://**" || web.PinOnChange != PinWarn {
		t.Errorf("group policy: %+v", web.Policy)
	}
	if len(cfg.Policy) != 1 || cfg.Policy[0].Name != "last" || cfg.PolicyDefault != ActionDeny || cfg.AuditPath() != "/tmp/a.jsonl" || !cfg.Audit.Arguments || !cfg.Audit.Required {
		t.Errorf("global policy: %+v %s %+v", cfg.Policy, cfg.PolicyDefault, cfg.Audit)
	}
	if got := web.Servers[0].Retry; got.Attempts != 5 {
		t.Errorf("settings retry not inherited: %+v", got)
	}
}

func TestParseReportsEveryErrorWithLineAndKey(t *testing.T) {
	_, err := Load("../../testdata/config/bad.yaml")
	var merr *multierror.Error
	if !errors.As(err, &merr) {
		t.Fatalf("want all errors at once, got %v", err)
	}
	want := []string{
		"bad.yaml:1: mode: must be dynamic, flat or auto",
		"bad.yaml:3: settings.call_timeout: must be a positive duration",
		"bad.yaml:7: groups.files.colour: unknown key",
		"bad.yaml:5: groups.files.description: is required",
		"bad.yaml:8: groups.web: has no server",
		"bad.yaml:10: groups.both: has both command: and url:",
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("missing %q in:\n%s", w, msg)
		}
	}
	if len(merr.Errors) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(merr.Errors), len(want), msg)
	}
	for _, e := range merr.Errors {
		var ce *ConfigError
		if !errors.As(e, &ce) || ce.Line == 0 {
			t.Errorf("error without line: %v", e)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", ``, "file is empty"},
		{"no groups", `mode: flat`, "groups: is required"},
		{"yaml syntax", "groups:\n  a: [", "config:2"},
		{"bad group name", "groups:\n  'a b': {description: x, command: y}", "group name must be"},
		{"unset variable outside groups", "settings: {call_timeout: '${DMCP_NOPE_NOPE}'}\ngroups:\n  a: {description: x, command: y}", "config:1: settings.call_timeout: environment variable DMCP_NOPE_NOPE is not set"},
		{"bad url", "groups:\n  a: {description: x, url: 'ftp://x'}", "must be an http:// or https:// URL"},
		{"stdio with url", "groups:\n  a: {description: x, url: 'http://x', transport: stdio}", "is stdio but the server has url:"},
		{"inline and servers", "groups:\n  a:\n    description: x\n    command: y\n    servers: {b: {command: z}}", "both an inline server and servers:"},
		{"args not a list", "groups:\n  a: {description: x, command: y, args: z}", "groups.a.args: must be a list"},
		{"duplicate key", "groups:\n  a: {description: x, command: y, command: z}", "appears twice"},
		{"bad size", "settings: {max_message_size: 10GB}\ngroups:\n  a: {description: x, command: y}", "must be a size"},
		{"bad pattern", "groups:\n  files:\n    description: x\n    command: y\n    deny: [\"^ok\", \"^write_(\"]", `config:5: groups.files.deny[1]: invalid pattern "^write_("`},
		{"glob in deny", "groups:\n  files:\n    description: x\n    command: y\n    deny: [\"*_file\"]", `(deny takes RE2 regular expressions, not globs as policy: does: for the glob "*_file" write "^.*_file$")`},
		{"rule without action", "groups:\n  a: {description: x, command: y, policy: [{tool: x}]}", "policy[0].action: is required"},
		{"rule with bad action", "policy: [{action: maybe}]\ngroups:\n  a: {description: x, command: y}", "must be allow, deny, log or prompt"},
		{"rule for an unknown server", "groups:\n  a: {description: x, command: y, policy: [{action: deny, server: zz}]}", `names "zz", which is not a server of this group`},
		{"args without tool", "groups:\n  a: {description: x, command: y, policy: [{action: deny, args: {p: x}}]}", "only applies to tool calls"},
		{"bad policy_default", "policy_default: log\ngroups:\n  a: {description: x, command: y}", "must be allow or deny"},
		{"bad isolation", "groups:\n  a: {description: x, command: y, isolation: private}", `groups.a.isolation: must be shared or per-session, not "private"`},
		{"instructions not a bool", "groups:\n  a:\n    description: x\n    command: y\n    instructions: none", "config:5: groups.a.instructions: must be true or false"},
		{"bad retry", "groups:\n  a: {description: x, command: y, retry: {attempts: 0}}", "must be at least 1"},
		{"required audit off", "audit: {path: off, required: true}\ngroups:\n  a: {description: x, command: y}", `config:1: audit.required: needs an audit trail, but path is "off"`},
		{"oauth on a process", "groups:\n  a: {description: x, command: y, oauth: {redirect_port: 8765}}", "groups.a.oauth: only applies to url: servers"},
		{"expected issuer not a URL", "groups:\n  a: {description: x, url: 'https://h', oauth: {expected_issuer: atlassian}}", "groups.a.oauth.expected_issuer: must be the issuer's URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("", strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// A value of the wrong type is one problem, reported once.
func TestParseReportsBadNumberOnce(t *testing.T) {
	_, err := Parse("", strings.NewReader("groups:\n  a: {description: x, command: y, retry: {attempts: many}}"))
	if err == nil || !strings.Contains(err.Error(), "must be a whole number") || strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("want only \"must be a whole number\", got %v", err)
	}
}

func TestHomePaths(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	cfg, err := Parse("", strings.NewReader("state_dir: ~/state\naudit: {path: ~/a.jsonl}\ngroups:\n  a: {description: x, command: y, cwd: ~/work}"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != "/home/tester/state" || cfg.AuditPath() != "/home/tester/a.jsonl" || cfg.Groups[0].Servers[0].Cwd != "/home/tester/work" {
		t.Errorf("~ not expanded: %s %s %s", cfg.StateDir, cfg.AuditPath(), cfg.Groups[0].Servers[0].Cwd)
	}
	t.Setenv("DYNAMIC_MCP_HOME", "/srv/dmcp")
	cfg, _ = Parse("", strings.NewReader("groups:\n  a: {description: x, command: y}"))
	if cfg.StateDir != "/srv/dmcp" || cfg.AuditPath() != "/srv/dmcp/audit.jsonl" {
		t.Errorf("DYNAMIC_MCP_HOME: %s %s", cfg.StateDir, cfg.AuditPath())
	}
}

func TestExpand(t *testing.T) {
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"A": "x", "EMPTY": ""}[k]
		return v, ok
	}
	for in, want := range map[string]string{
		"plain":         "plain",
		"${A}/b":        "x/b",
		"${B:-def}":     "def",
		"${EMPTY:-def}": "def",
		"${EMPTY}":      "",
		"$$A":           "$A",
		"cost $5":       "cost $5",
		"${A}${A}":      "xx",
	} {
		got, err := expand(in, env)
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${B}", "${", "${1X}"} {
		if _, err := expand(in, env); err == nil {
			t.Errorf("expand(%q) should fail", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("groups:\n  a: {description: x, command: y}")
	f.Add("mode: flat\ngroups:\n  a:\n    description: d\n    servers: {s: {url: 'http://h'}}")
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse("f.yaml", strings.NewReader(src))
		if err == nil && len(cfg.Groups) == 0 {
			t.Fatal("a config without groups passed")
		}
	})
}
