package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
)

// An unset ${VAR} or missing ${secret:NAME} in a group holds up that
// server (a server's key) or the group's servers (a group's key), with
// where it is and the fix; the config parses and the rest is whole.
func TestUnsetVariableHoldsUpItsServer(t *testing.T) {
	t.Setenv("DMCP_SET", "here")
	t.Setenv(ConfigEnvVar, "")
	t.Setenv("DYNAMIC_MCP_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "my config.yaml")
	src := `groups:
  inline:
    description: x
    command: srv
    args: ["${DMCP_UNSET_A}", "${DMCP_SET}"]
  several:
    description: y
    servers:
      vaulted: { url: "https://h.example/mcp", headers: { Authorization: "Bearer ${secret:NOPE}" } }
      plain: { command: srv, args: ["${DMCP_SET}"] }
  grouped:
    description: z
    deny: ["${DMCP_UNSET_B}"]
    servers:
      one: { command: srv }
      two: { command: srv }
  fine: { description: w, command: srv }
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Loader{Secrets: secrets.Source{}}.Load(path)
	if err != nil {
		t.Fatalf("an unset variable in a group failed the config: %v", err)
	}
	quoted := "'" + path + "'"
	want := map[string]string{
		"inline": "environment variable DMCP_UNSET_A is not set (export DMCP_UNSET_A=... where the hub starts, or run: dynamic-mcp secret set DMCP_UNSET_A -c " +
			quoted + " and write ${secret:DMCP_UNSET_A})",
		"several/vaulted": "secret NOPE is not set (run: dynamic-mcp secret set NOPE -c " + quoted + ")",
		"several/plain":   "",
		"grouped/one":     "environment variable DMCP_UNSET_B is not set",
		"grouped/two":     "environment variable DMCP_UNSET_B is not set",
		"fine":            "",
	}
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			got := ""
			if err := s.Unavailable(); err != nil {
				got = err.Error()
			}
			if w := want[s.ID()]; w == "" && got != "" || !strings.HasPrefix(got, w) {
				t.Errorf("%s: unavailable %q, want %q", s.ID(), got, w)
			}
			if s.Startable() != (want[s.ID()] == "") {
				t.Errorf("%s: startable %v", s.ID(), s.Startable())
			}
		}
	}
	u := cfg.Groups[0].Servers[0].Unresolved
	if len(u) != 1 || u[0].Line != 5 || u[0].Key != "groups.inline.args[0]" || u[0].Path != path {
		t.Errorf("unresolved of inline = %v, want one at %s:5 groups.inline.args[0]", u, path)
	}
	if got := cfg.Groups[0].Servers[0].Args; got[1] != "here" {
		t.Errorf("a set variable beside an unset one: args = %q", got)
	}
}

// The hints' commands name the config with -c unless a command finds it
// without: ~/.dynamic-mcp/config.yaml, and no $DYNAMIC_MCP_CONFIG naming
// another file.
func TestCommandNamesTheConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DYNAMIC_MCP_HOME", home)
	def := filepath.Join(home, "config.yaml")
	other := filepath.Join(t.TempDir(), "it's.yaml")
	for _, tc := range []struct {
		name, env, path, want string
	}{
		{"the default", "", def, "dynamic-mcp pin accept g/s"},
		{"the default named by the variable too", def, def, "dynamic-mcp pin accept g/s"},
		{"another file", "", other, "dynamic-mcp pin accept g/s -c '" + strings.ReplaceAll(other, "'", `'\''`) + "'"},
		{"another file named by the variable", other, other, "dynamic-mcp pin accept g/s -c '" + strings.ReplaceAll(other, "'", `'\''`) + "'"},
		{"the default while the variable names another", other, def, "dynamic-mcp pin accept g/s -c " + def},
		{"no file", "", "", "dynamic-mcp pin accept g/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ConfigEnvVar, tc.env)
			cfg, err := Parse(tc.path, strings.NewReader("groups:\n  g: {description: x, servers: {s: {command: srv}}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Command("pin", "accept", "g/s"); got != tc.want {
				t.Errorf("Command = %s, want %s", got, tc.want)
			}
			if got := cfg.Groups[0].Servers[0].CLI; got != cfg.CLI {
				t.Errorf("the server's CLI %v differs from the config's %v", got, cfg.CLI)
			}
		})
	}
}
