package clients

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// parse is the config yaml, parsed as serve reads it.
func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The views a snapshot builds: each profile's in its own mode, and where a
// client may be shown another mode, every view in that one too; a
// session's key names the one it sees.
func TestViews(t *testing.T) {
	const groups = "groups:\n  a: {description: a, command: x}\n  b: {description: b, command: x}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // the views built: key (groups, mode)
		client     string   // a client of name@version, seeing profile p ("" the whole config)
		key        string   // the key of the view it sees
	}{
		{"no profiles", "mode: dynamic\n" + groups, nil, "claude-code@2.1.0", ""},
		{"profiles", "mode: flat\n" + groups + "profiles:\n  p: {groups: [a]}\n",
			[]string{"p [a] flat"}, "claude-code@2.1.0", ""},
		{"auto", "mode: auto\n" + groups + "profiles:\n  p: {groups: [a], mode: flat}\n",
			[]string{"#flat [] flat", "p [a] flat", "p#dynamic [a] dynamic"}, "claude-code@2.1.0", "#flat"},
		{"auto, unknown client", "mode: auto\n" + groups,
			[]string{"#flat [] flat"}, "gemini-cli-mcp-client@0.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parse(t, tc.yaml)
			views := Views(cfg, func(only []*config.Group, mode config.Mode, pcfg *config.Config) string {
				var names []string
				for _, g := range only {
					names = append(names, g.Name)
				}
				return fmt.Sprintf("%v %s", names, mode)
			})
			var got []string
			for k, v := range views {
				got = append(got, k+" "+v)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("views %q, want %q", got, tc.want)
			}
			name, version, _ := strings.Cut(tc.client, "@")
			key := ""
			if ModesVary(cfg) {
				key = ViewKey(cfg, "", mcp.Implementation{Name: name, Version: version})
			}
			if key != tc.key {
				t.Errorf("%s sees %q, want %q", tc.client, key, tc.key)
			}
		})
	}
}
