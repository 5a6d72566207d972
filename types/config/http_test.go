package config

import (
	"log/slog"
	"maps"
	"slices"
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

// http.tokens names a credential per client; names are non-empty, tokens
// at least 16 bytes and each its own, and every token is hidden from
// stdio servers and from logs.
func TestHTTPTokens(t *testing.T) {
	const groups = "groups:\n  g: { description: d, command: echo }\n"
	t.Setenv("B_TOKEN", "bbbbbbbbbbbbbbbbbbbb")
	cfg, err := Parse("c.yaml", strings.NewReader("http:\n  token: main-token\n  tokens:\n    a: aaaaaaaaaaaaaaaa\n    b: ${B_TOKEN}\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"default": "main-token", "a": "aaaaaaaaaaaaaaaa", "b": "bbbbbbbbbbbbbbbbbbbb"}
	if got := cfg.HTTP.Credentials(); !maps.Equal(got, want) {
		t.Errorf("credentials %v, want %v", got, want)
	}
	if hide := cfg.Groups[0].Servers[0].Hide; !slices.Equal(hide, []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "main-token"}) {
		t.Errorf("hidden from stdio servers: %q", hide)
	}
	var buf strings.Builder
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "http", cfg.HTTP)
	if strings.Contains(buf.String(), "aaaa") || strings.Contains(buf.String(), "bbbb") || strings.Contains(buf.String(), "main-token") || !strings.Contains(buf.String(), "[a b]") {
		t.Errorf("logged: %s", buf.String())
	}
	// Only tokens: no default credential.
	cfg, err = Parse("c.yaml", strings.NewReader("http: {tokens: {a: aaaaaaaaaaaaaaaa}}\n"+groups))
	if err != nil || !maps.Equal(cfg.HTTP.Credentials(), map[string]string{"a": "aaaaaaaaaaaaaaaa"}) {
		t.Errorf("tokens alone: %v %v", err, cfg)
	}
	for bad, why := range map[string]string{
		"{tokens: {a: short}}":                                     "at least 16 bytes",
		"{tokens: {'': aaaaaaaaaaaaaaaa}}":                         "must not be empty",
		"{tokens: {a: aaaaaaaaaaaaaaaa, b: aaaaaaaaaaaaaaaa}}":     "same token",
		"{token: aaaaaaaaaaaaaaaa, tokens: {b: aaaaaaaaaaaaaaaa}}": "same token as http.token",
		"{token: x, tokens: {default: aaaaaaaaaaaaaaaa}}":          "http.token's credential",
		"{tokens: [a]}":            "must be a map",
		"{tokens: {a: '${NOPE}'}}": "NOPE",
	} {
		if _, err := Parse("c.yaml", strings.NewReader("http: "+bad+"\n"+groups)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want %q", bad, err, why)
		}
	}
}
