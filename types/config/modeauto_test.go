package config

import (
	"strings"
	"testing"
)

// mode: auto at the top and in a profile; a clients: rule names dynamic or
// flat (auto there would be no choice); no mode: is dynamic, as before.
func TestModeAuto(t *testing.T) {
	const groups = "groups:\n  g:\n    description: g\n    command: g\n"
	cfg, err := Parse("t.yaml", strings.NewReader("mode: auto\nprofiles:\n  p: {groups: [g], mode: auto}\nclients:\n  - {match: 'claude-code', mode: dynamic}\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeAuto || cfg.Profiles["p"].Mode != ModeAuto || cfg.Clients[0].Mode != ModeDynamic {
		t.Errorf("modes %q %q %q", cfg.Mode, cfg.Profiles["p"].Mode, cfg.Clients[0].Mode)
	}
	if cfg, err := Parse("t.yaml", strings.NewReader(groups)); err != nil || cfg.Mode != ModeDynamic {
		t.Errorf("no mode: %v %v", cfg, err)
	}
	_, err = Parse("t.yaml", strings.NewReader("clients:\n  - {match: 'x', mode: auto}\n"+groups))
	if err == nil || !strings.Contains(err.Error(), "clients[0].mode") {
		t.Errorf("a rule's mode: auto: %v", err)
	}
}
