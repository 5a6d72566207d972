package config

import (
	"strings"
	"testing"
)

// A policy glob doublestar cannot match with is a config error naming the
// file, line and key; "*" is a valid argument key.
func TestParseBadPolicyGlob(t *testing.T) {
	_, err := Parse("p.yaml", strings.NewReader(`groups:
  g:
    description: g
    command: x
    policy:
      - { action: deny, tool: "read_[", args: { "*": "**/x", path: "{a,b" } }
`))
	if err == nil {
		t.Fatal("a bad glob was accepted")
	}
	for _, want := range []string{`p.yaml:6: groups.g.policy[0].tool: "read_[" is not a valid glob`, `p.yaml:6: groups.g.policy[0].args.path: "{a,b" is not a valid glob`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwants %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "args.*") {
		t.Errorf("a good glob was reported: %v", err)
	}
}
