package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in     string
		calls  int
		period time.Duration
	}{
		{"3/minute", 3, time.Minute},
		{"3/m", 3, time.Minute},
		{"1/second", 1, time.Second},
		{"10/s", 10, time.Second},
		{"100/hour", 100, time.Hour},
		{"5/h", 5, time.Hour},
		{"2/day", 2, 24 * time.Hour},
		{"2/d", 2, 24 * time.Hour},
		{"3/10s", 3, 10 * time.Second},
		{"7/1h30m", 7, 90 * time.Minute},
		{" 4 / minute ", 4, time.Minute},
	} {
		calls, period, err := ParseRate(c.in)
		if err != nil || calls != c.calls || period != c.period {
			t.Errorf("ParseRate(%q) = %d, %v, %v; want %d, %v", c.in, calls, period, err, c.calls, c.period)
		}
	}
	for _, bad := range []string{"", "3", "minute", "0/minute", "-1/minute", "x/minute", "3/", "3/week", "3/0s", "3/-5s", "1.5/minute", "3/minute/2"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) took it", bad)
		}
	}
}

// A rule's rate:, per: and then: are read with their defaults; a group
// rule and a global one alike.
func TestRuleRateParsed(t *testing.T) {
	cfg, err := Parse("c.yaml", strings.NewReader(`
groups:
  gh:
    description: GitHub
    command: gh-mcp
    policy:
      - { name: issues, action: allow, tool: "create_issue", rate: 3/minute }
      - { action: log, tool: "comment_*", rate: "10/30s", per: hub, then: prompt }
      - { action: allow, tool: "*" }
policy:
  - { action: prompt, tool: "*", rate: 100/day, per: profile, then: deny }
`))
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.Groups[0].Policy
	if r := rules[0].Rate; r == nil || *r != (RateLimit{Calls: 3, Period: time.Minute, Text: "3/minute", Per: RatePerSession, Then: ActionDeny}) {
		t.Errorf("rate with defaults: %+v", r)
	}
	if r := rules[1].Rate; r == nil || *r != (RateLimit{Calls: 10, Period: 30 * time.Second, Text: "10/30s", Per: RatePerHub, Then: ActionPrompt}) {
		t.Errorf("rate with per and then: %+v", r)
	}
	if rules[2].Rate != nil {
		t.Errorf("a rule without rate: has one: %+v", rules[2].Rate)
	}
	if r := cfg.Policy[0].Rate; r == nil || *r != (RateLimit{Calls: 100, Period: 24 * time.Hour, Text: "100/day", Per: RatePerProfile, Then: ActionDeny}) {
		t.Errorf("global rule's rate: %+v", r)
	}
}

// Every mistake in a loop guard is reported, at its own line and key.
func TestRuleRateErrors(t *testing.T) {
	src := `groups:
  gh:
    description: GitHub
    command: gh-mcp
    policy:
      - { action: allow, tool: a, rate: 3 }
      - { action: allow, tool: b, rate: 0/minute }
      - { action: allow, tool: c, rate: 3/week }
      - { action: allow, tool: d, rate: 3/minute, per: user }
      - { action: allow, tool: e, rate: 3/minute, then: log }
      - { action: allow, tool: f, per: hub }
      - { action: allow, tool: g, then: prompt }
      - { action: deny, tool: h, rate: 3/minute }
      - { action: allow, tool: i, rate: [3, minute] }
      - { name: twice, action: allow, tool: j }
      - { name: twice, action: log, tool: k, rate: 3/minute }
      - { name: other, action: log, tool: l }
      - { name: other, action: log, tool: m }
`
	_, err := Parse("c.yaml", strings.NewReader(src))
	if err == nil {
		t.Fatal("took a config with bad rates")
	}
	want := []struct {
		line int
		key  string
		text string
	}{
		{6, "groups.gh.policy[0].rate", "N/period"},
		{7, "groups.gh.policy[1].rate", "at least 1"},
		{8, "groups.gh.policy[2].rate", "period must be"},
		{9, "groups.gh.policy[3].per", `session, profile or hub, not "user"`},
		{10, "groups.gh.policy[4].then", `deny or prompt, not "log"`},
		{11, "groups.gh.policy[5].per", "only applies with rate:"},
		{12, "groups.gh.policy[6].then", "only applies with rate:"},
		{13, "groups.gh.policy[7].rate", "a deny rule"},
		{14, "groups.gh.policy[8].rate", "must be a string"},
		{16, "groups.gh.policy[10].name", `"twice" names groups.gh.policy[9] too`},
	}
	var errs []*ConfigError
	for _, e := range unwrapAll(err) {
		var ce *ConfigError
		if errors.As(e, &ce) {
			errs = append(errs, ce)
		}
	}
	if len(errs) != len(want) {
		t.Errorf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for _, w := range want {
		found := false
		for _, e := range errs {
			if e.Line == w.line && e.Key == w.key && strings.Contains(e.Err.Error(), w.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error at line %d, %s, saying %q:\n%v", w.line, w.key, w.text, err)
		}
	}
}

func unwrapAll(err error) []error {
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		return m.Unwrap()
	}
	if m, ok := err.(interface{ WrappedErrors() []error }); ok {
		return m.WrappedErrors()
	}
	return []error{err}
}

// ParseRate never panics, and what it takes is a limit that can be
// counted: at least one call over a positive period.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"3/minute", "10/30s", "0/m", "1/1ns", "9999999999999999999/s", "/", "3/-1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		calls, period, err := ParseRate(s)
		if err == nil && (calls < 1 || period <= 0) {
			t.Errorf("ParseRate(%q) = %d, %v", s, calls, period)
		}
	})
}
