package config

import (
	"strings"
	"testing"
	"time"
)

// settings.prompt_timeout (default 2m) and settings.notify (default
// false), and a clients: rule's approvals: inbox (issue 24).
func TestApprovalSettings(t *testing.T) {
	const groups = "groups:\n  a: {description: x, command: y}\n"
	cfg, err := Parse("", strings.NewReader(groups))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Settings.PromptTimeout != 2*time.Minute || cfg.Settings.Notify {
		t.Errorf("defaults: %v %v", cfg.Settings.PromptTimeout, cfg.Settings.Notify)
	}
	cfg, err = Parse("", strings.NewReader("settings: {prompt_timeout: 30s, notify: true}\nclients:\n  - {match: 'codex*', approvals: inbox}\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Settings.PromptTimeout != 30*time.Second || !cfg.Settings.Notify {
		t.Errorf("set: %v %v", cfg.Settings.PromptTimeout, cfg.Settings.Notify)
	}
	if _, r := cfg.ClientRuleFor("codex-mcp-client"); r == nil || r.Approvals != ApprovalsInbox {
		t.Errorf("clients rule: %+v", r)
	}
	for src, want := range map[string]string{
		"settings: {prompt_timeout: 0s}\n":                  "settings.prompt_timeout: must be a positive duration",
		"settings: {notify: maybe}\n":                       "settings.notify",
		"clients:\n  - {match: 'codex*', approvals: ask}\n": `clients[0].approvals: must be inbox`,
	} {
		if _, err := Parse("", strings.NewReader(src+groups)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", src, want, err)
		}
	}
}
