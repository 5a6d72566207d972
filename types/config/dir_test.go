package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A stdio server runs in the config file's directory unless cwd: says
// otherwise, relative paths in the config start there, and
// ${CONFIG_DIR} names it.
func TestPathsAreRelativeToTheConfigFile(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	t.Setenv("CONFIG_DIR", "/not/this/one")
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "c.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	src := `
groups:
  plain:   { description: x, command: node, args: ["server.js", "${CONFIG_DIR}/data"] }
  rel:     { description: x, command: ./server.sh, cwd: work }
  nested:  { description: x, command: bin/server, cwd: /srv }
  parent:  { description: x, command: ../tools/server, cwd: ../work }
  home:    { description: x, command: ~/bin/server, cwd: ~/work }
  abs:     { description: x, command: /usr/bin/server, cwd: "${CONFIG_DIR}/x" }
  remote:  { description: x, url: "https://h.example/mcp", headers: { X-Dir: "${CONFIG_DIR}" } }
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(dir, "sub")
	// A relative path to the file is made absolute.
	t.Chdir(dir)
	cfg, err := Load(filepath.Join("sub", "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{ // group: command, cwd
		"plain":  {"node", cfgDir},
		"rel":    {filepath.Join(cfgDir, "server.sh"), filepath.Join(cfgDir, "work")},
		"nested": {filepath.Join(cfgDir, "bin", "server"), "/srv"},
		"parent": {filepath.Join(dir, "tools", "server"), filepath.Join(dir, "work")},
		"home":   {"/home/tester/bin/server", "/home/tester/work"},
		"abs":    {"/usr/bin/server", filepath.Join(cfgDir, "x")},
		"remote": {"", ""},
	}
	for _, g := range cfg.Groups {
		s := g.Servers[0]
		if got := [2]string{s.Command, s.Cwd}; got != want[g.Name] {
			t.Errorf("%s: command, cwd = %q, want %q", g.Name, got, want[g.Name])
		}
	}
	if got := cfg.Groups[0].Servers[0].Args; got[0] != "server.js" || got[1] != filepath.Join(cfgDir, "data") {
		t.Errorf("args = %q", got)
	}
	if got := cfg.Groups[6].Servers[0].Headers["X-Dir"]; got != cfgDir {
		t.Errorf("${CONFIG_DIR} in a header = %q", got)
	}
}

// A config read without a file name runs its servers in the hub's
// directory, which ${CONFIG_DIR} names.
func TestPathsWithoutAFile(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("", strings.NewReader(`groups: { a: { description: x, command: ./s, args: ["${CONFIG_DIR}"] } }`))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Groups[0].Servers[0]; s.Cwd != wd || s.Command != filepath.Join(wd, "s") || s.Args[0] != wd {
		t.Errorf("command %q, cwd %q, args %q; want all in %s", s.Command, s.Cwd, s.Args, wd)
	}
}

// ${DYNAMIC_MCP_HOME} names the hub's directory, set or not: a file kept
// there (the quickstart's memory) follows the variable, and a config
// that names it reads without it. Always defined, it never takes the
// default of ${DYNAMIC_MCP_HOME:-...}, the environment's variable unset
// or not.
func TestDynamicMCPHomeVariable(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	for _, tc := range []struct{ set, want string }{
		{"", "/home/tester/.dynamic-mcp/m.jsonl"},
		{"/srv/hub", "/srv/hub/m.jsonl"},
	} {
		t.Setenv("DYNAMIC_MCP_HOME", tc.set)
		if tc.set == "" {
			os.Unsetenv("DYNAMIC_MCP_HOME")
		}
		for _, ref := range []string{"${DYNAMIC_MCP_HOME}/m.jsonl", "${DYNAMIC_MCP_HOME:-/srv/other}/m.jsonl"} {
			cfg, err := Parse("", strings.NewReader(`groups: { a: { description: x, command: s, env: { F: "`+ref+`" } } }`))
			if err != nil {
				t.Fatalf("DYNAMIC_MCP_HOME=%q: %v", tc.set, err)
			}
			if got := cfg.Groups[0].Servers[0].Env["F"]; got != tc.want {
				t.Errorf("DYNAMIC_MCP_HOME=%q: %s is %q, want %q", tc.set, ref, got, tc.want)
			}
		}
	}
}

// The HTTP token is hidden from every child, whatever variable holds it.
func TestHTTPTokenIsHiddenFromChildren(t *testing.T) {
	t.Setenv("DMCP_TEST_HUB_TOKEN", "s3cret")
	cfg, err := Parse("", strings.NewReader(`
http: { token: "${DMCP_TEST_HUB_TOKEN}" }
groups:
  a: { description: x, command: y }
  b: { description: x, url: "https://h.example/mcp" }
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Groups[0].Servers[0].Hide; len(got) != 1 || got[0] != "s3cret" {
		t.Errorf("stdio server hides %q", got)
	}
	if got := cfg.Groups[1].Servers[0].Hide; got != nil {
		t.Errorf("url server hides %q", got)
	}
	cfg, _ = Parse("", strings.NewReader("groups:\n  a: { description: x, command: y }"))
	if got := cfg.Groups[0].Servers[0].Hide; got != nil {
		t.Errorf("without http.token the server hides %q", got)
	}
}

// A config that reads ${DYNAMIC_MCP_HOME} reads, where it is not set, the
// user's home: the bridges of one shared hub agree on that variable too
// (EnvUses), else a client with another HOME had its files where the
// first client's home said.
func TestDynamicMCPHomeVariableUses(t *testing.T) {
	const yaml = `groups: { a: { description: x, command: s, env: { F: "${DYNAMIC_MCP_HOME}/m.jsonl" } } }`
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"", []string{"DYNAMIC_MCP_HOME", homeVar()}},
		{"/srv/hub", []string{"DYNAMIC_MCP_HOME"}},
	} {
		t.Setenv("DYNAMIC_MCP_HOME", tc.set)
		if tc.set == "" {
			os.Unsetenv("DYNAMIC_MCP_HOME")
		}
		cfg, err := Parse("", strings.NewReader(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.EnvUses, slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("DYNAMIC_MCP_HOME=%q: EnvUses %q, want %q", tc.set, cfg.EnvUses, tc.want)
		}
	}
}
