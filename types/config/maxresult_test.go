package config

import (
	"strings"
	"testing"
)

func TestParseMaxResult(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"20KB", 20000, true}, {"20 KB", 20000, true}, {"20KiB", 20480, true}, {"1MB", 1000000, true}, {"1MiB", 1 << 20, true},
		{"20000", 20000, true}, {"0", 0, true},
		{"25k tokens", 100000, true}, {"25ktokens", 100000, true}, {"5000 tokens", 20000, true}, {"5000tokens", 20000, true},
		{"100", 0, false}, {"1KB", 0, false}, {"20 kb", 0, false}, {"-5KB", 0, false}, {"lots", 0, false}, {"2GiB", 0, false}, {"k tokens", 0, false},
	} {
		got, ok := ParseMaxResult(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseMaxResult(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The cap of a client's tool results: its clients: rule's, else its
// profile's, else settings'; off in a rule or profile lifts the cap.
func TestMaxResultFor(t *testing.T) {
	src := profileGroups + "settings: {max_result: 20KB}\n" +
		"profiles:\n  small: {groups: [a], max_result: 5000 tokens}\n  free: {groups: [a], max_result: 'off'}\n  plain: {groups: [a]}\n" +
		"clients:\n  - {match: 'claude-code*', max_result: 25k tokens}\n  - {match: 'big*', max_result: 'off'}\n  - {match: 'cursor*', max_tools: 40}\n"
	cfg, err := Parse("", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client, profile string
		want            int
	}{
		{"t", "", 20000}, {"t", "plain", 20000}, {"t", "small", 20000}, {"t", "free", 0},
		{"claude-code", "", 100000}, {"claude-code", "small", 100000}, {"big-client", "small", 0},
		{"cursor", "small", 20000}, {"cursor", "", 20000},
	} {
		if got := cfg.MaxResultFor(tc.client, tc.profile); got != tc.want {
			t.Errorf("client %q profile %q: %d, want %d", tc.client, tc.profile, got, tc.want)
		}
	}
	if p, _ := cfg.WithProfile("small"); p.Settings.MaxResult != 20000 {
		t.Errorf("profile small's settings.max_result %d", p.Settings.MaxResult)
	}
	if p, _ := cfg.WithProfile("free"); p.Settings.MaxResult != 0 {
		t.Errorf("profile free's settings.max_result %d", p.Settings.MaxResult)
	}
	none, err := Parse("", strings.NewReader(profileGroups))
	if err != nil || none.MaxResultFor("t", "") != 0 {
		t.Errorf("no max_result: %v %d", err, none.MaxResultFor("t", ""))
	}
}

func TestParseMaxResultErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"settings: {max_result: 100}\n", "settings.max_result: must be a size such as 20KB"},
		{"settings: {max_result: lots}\n", `not "lots"`},
		{"clients:\n  - {match: x, max_result: 1KB}\n", "clients[0].max_result: must be a size"},
		{"profiles:\n  p: {groups: [a], max_result: [1]}\n", "profiles.p.max_result: must be a string"},
	} {
		_, err := Parse("", strings.NewReader(profileGroups+tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// Results are capped under a config when settings, a profile or a
// clients: rule set a cap; "off" caps nothing.
func TestCapsResults(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"", false},
		{"settings: {max_result: 20KB}\n", true},
		{"profiles:\n  small: {groups: [a], max_result: 5000 tokens}\n", true},
		{"profiles:\n  free: {groups: [a], max_result: 'off'}\n", false},
		{"clients:\n  - {match: 'claude-code*', max_result: 25k tokens}\n", true},
		{"clients:\n  - {match: 'big*', max_result: 'off'}\n", false},
	} {
		cfg, err := Parse("", strings.NewReader(profileGroups+tc.src))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.CapsResults(); got != tc.want {
			t.Errorf("%q: CapsResults %v, want %v", tc.src, got, tc.want)
		}
	}
}
