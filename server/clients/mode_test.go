package clients

import "testing"

// The table's versions: Claude Code from 2.1 on, whatever the rest.
func TestSelfSearching(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"claude-code", "2.1.332", true}, {"Claude-Code", "2.1", true}, {"claude-code", "3.0.0", true},
		{"claude-code", "2.1.0-beta.1", true}, {"claude-code", "v2.2", true},
		{"claude-code", "2.0.99", false}, {"claude-code", "1.9", false}, {"claude-code", "", false}, {"claude-code", "two", false},
		{"qwen-cli-mcp-client-x", "0.0.1", true}, {"gemini-cli-mcp-client", "0.61.0", false}, {"Claude Code", "2.1.3", false},
	} {
		if got := selfSearching(tc.name, tc.version) != nil; got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.name, tc.version, got, tc.want)
		}
	}
}
