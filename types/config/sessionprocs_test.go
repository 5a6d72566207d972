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

// http.client_share is a fraction or a percent, 0.5 by default, above
// zero and at most the whole.
func TestParseClientShare(t *testing.T) {
	const group = "\ngroups:\n  a: {description: x, command: y}"
	for _, tc := range []struct {
		src     string
		want    float64
		wantErr string
	}{
		{src: "http: {}", want: 0.5},
		{src: "http: {client_share: 0.25}", want: 0.25},
		{src: "http: {client_share: 30%}", want: 0.3},
		{src: "http: {client_share: 1}", want: 1},
		{src: "http: {client_share: 0}", wantErr: `http.client_share: must be a part of the whole above zero, such as 0.5 or "50%", not "0"`},
		{src: "http: {client_share: 150%}", wantErr: "http.client_share: must be a part"},
		{src: "http: {client_share: half}", wantErr: "http.client_share: must be a part"},
	} {
		cfg, err := Parse("", strings.NewReader(tc.src+group))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: want an error containing %q, got %v", tc.src, tc.wantErr, err)
			}
			continue
		}
		if err != nil || cfg.HTTP.ClientShare != tc.want {
			t.Errorf("%s: got %v %v, want %v", tc.src, cfg.HTTP.ClientShare, err, tc.want)
		}
	}
	for _, c := range []struct {
		limit int
		part  float64
		want  int
	}{{1000, 0.5, 500}, {64, 0.5, 32}, {1, 0.5, 1}, {3, 0.5, 1}, {10, 1, 10}} {
		if got := ShareOf(c.limit, c.part); got != c.want {
			t.Errorf("ShareOf(%d, %v) = %d, want %d", c.limit, c.part, got, c.want)
		}
	}
}
