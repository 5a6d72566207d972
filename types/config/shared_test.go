package config

import (
	"strings"
	"testing"
	"time"
)

// settings.shared takes auto (the default) or off; settings.shared_idle
// is a duration, 30s by default.
func TestParseShared(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		shared         SharedMode
		idle           time.Duration
		wantErrors     string
	}{
		{name: "defaults", shared: SharedAuto, idle: 30 * time.Second},
		{name: "off", settings: "settings: {shared: 'off', shared_idle: 2m}\n", shared: SharedOff, idle: 2 * time.Minute},
		{name: "bad", settings: "settings: {shared: yes}\n", wantErrors: `settings.shared: must be auto or off, not "yes"`},
		{name: "bad idle", settings: "settings: {shared_idle: soon}\n", wantErrors: "settings.shared_idle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("", strings.NewReader(tc.settings+"groups:\n  a: {description: x, command: y}"))
			if tc.wantErrors != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrors) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErrors, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Settings.Shared != tc.shared || cfg.Settings.SharedIdle != tc.idle {
				t.Errorf("shared %q idle %s, want %q %s", cfg.Settings.Shared, cfg.Settings.SharedIdle, tc.shared, tc.idle)
			}
		})
	}
}
