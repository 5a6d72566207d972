package config

import (
	"strings"
	"testing"
	"time"
)

// The limits of the HTTP face have safe defaults, are read from http:,
// and a limit of zero or less is an error.
func TestHTTPLimits(t *testing.T) {
	const groups = "groups:\n  g: { description: d, command: echo }\n"
	cfg, err := Parse("c.yaml", strings.NewReader(groups))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTP{MaxSessions: DefaultMaxSessions, BodyTimeout: DefaultBodyTimeout, MaxInflight: DefaultMaxInflight,
		MaxBodyMemory: DefaultMaxBodyMemory, MaxAuthFailures: DefaultMaxAuthFailures}
	if got := cfg.HTTP; got.MaxSessions != want.MaxSessions || got.BodyTimeout != want.BodyTimeout || got.MaxInflight != want.MaxInflight ||
		got.MaxBodyMemory != want.MaxBodyMemory || got.MaxAuthFailures != want.MaxAuthFailures {
		t.Errorf("defaults: %+v", got)
	}
	cfg, err = Parse("c.yaml", strings.NewReader("http: {max_sessions: 50, body_timeout: 5s, max_inflight: 64, max_body_memory: 32MiB, max_auth_failures: 3}\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.HTTP; got.MaxSessions != 50 || got.BodyTimeout != 5*time.Second || got.MaxInflight != 64 || got.MaxBodyMemory != 32<<20 || got.MaxAuthFailures != 3 {
		t.Errorf("set: %+v", got)
	}
	for _, bad := range []string{"max_sessions: 0", "body_timeout: 0s", "max_inflight: -1", "max_body_memory: 0", "max_auth_failures: x"} {
		if _, err := Parse("c.yaml", strings.NewReader("http: {"+bad+"}\n"+groups)); err == nil || !strings.Contains(err.Error(), strings.Split(bad, ":")[0]) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
