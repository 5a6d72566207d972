package config

import (
	"strings"
	"testing"
	"time"
)

// settings.max_session_processes and settings.session_process_idle default
// to 64 and 5m, take a positive number and duration, and refuse others.
func TestParseSessionProcessSettings(t *testing.T) {
	const group = "\ngroups:\n  a: {description: x, command: y}"
	for _, tc := range []struct {
		name, settings string
		max            int
		idle           time.Duration
		wantErr        string
	}{
		{name: "defaults", settings: "{}", max: 64, idle: 5 * time.Minute},
		{name: "set", settings: "{max_session_processes: 8, session_process_idle: 90s}", max: 8, idle: 90 * time.Second},
		{name: "zero", settings: "{max_session_processes: 0}", wantErr: "settings.max_session_processes"},
		{name: "no duration", settings: "{session_process_idle: 5}", wantErr: "settings.session_process_idle: must be a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("", strings.NewReader("settings: "+tc.settings+group))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Settings.MaxSessionProcesses != tc.max || cfg.Settings.SessionProcessIdle != tc.idle {
				t.Errorf("got %d, %s; want %d, %s", cfg.Settings.MaxSessionProcesses, cfg.Settings.SessionProcessIdle, tc.max, tc.idle)
			}
		})
	}
}
