package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A dotfiles-linked client config, installed into twice, with a server
// the user added between the installs and one added after: uninstall
// puts back the original servers and both added ones, through the link.
func TestInstallTwiceThroughSymlinkThenUninstallKeepsEveryServer(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	env := clients.Env{Home: home, OS: "linux"}
	c, _ := clients.Find(env, "cursor")
	path, _ := c.Path(env, "")
	dotfile := filepath.Join(home, "dotfiles", "cursor-mcp.json")
	os.MkdirAll(filepath.Dir(dotfile), 0o700)
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(dotfile, []byte(`{"mcpServers": {"one": {"command": "a"}, "two": {"command": "b"}}}`), 0o644)
	if err := os.Symlink(dotfile, path); err != nil {
		t.Skip("no symlinks here:", err)
	}
	cfg := filepath.Join(home, "hub.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
	addServer := func(name string) {
		t.Helper()
		var doc map[string]map[string]any
		b, _ := os.ReadFile(path)
		mustUnmarshal(t, b, &doc)
		doc["mcpServers"][name] = map[string]any{"command": name}
		b, _ = json.Marshal(doc)
		os.WriteFile(dotfile, b, 0o644)
	}
	servers := func() string {
		t.Helper()
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink (%v)", path, err)
		}
		b, _ := os.ReadFile(dotfile)
		got, _, err := c.Read(b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		var n []string
		for _, s := range got {
			n = append(n, s.Name)
		}
		return strings.Join(n, " ")
	}
	install := func() string {
		t.Helper()
		out, errOut, err := runCLI(t, "install", "cursor", "-c", cfg, "--force")
		if err != nil {
			t.Fatalf("install: %v\n%s", err, errOut)
		}
		return out
	}
	install()
	if got := servers(); got != "dynamic-mcp" {
		t.Fatalf("after install: %q", got)
	}
	addServer("between")
	if out := install(); !strings.Contains(out, "installed already") {
		t.Errorf("second install says:\n%s", out)
	}
	if got := servers(); got != "dynamic-mcp" {
		t.Fatalf("after the second install: %q", got)
	}
	addServer("after")
	if _, errOut, err := runCLI(t, "uninstall", "cursor"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, errOut)
	}
	if got := servers(); got != "one two between after" {
		t.Errorf("after uninstall: %q, want the original servers and both added ones", got)
	}
}

// Import keeps what it reads: a $ reaches the server as written, names
// that make the same group name are suffixed and counted, and files too
// deep or too large are refused before parsing.
func TestImportKeepsDollarsAndCollidingNames(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join(home, "servers.json")
	os.WriteFile(src, []byte(`{"mcpServers": {
		"my server": {"command": "srv", "args": ["--pass=pa$word"], "env": {"PASSWORD": "pa$$word"}},
		"my/server": {"command": "other"}
	}}`), 0o600)
	out := filepath.Join(home, "hub.yaml")
	os.WriteFile(out, []byte("groups:\n  my-server:\n    description: there before\n    command: old\n"), 0o600)
	stdout, stderr, err := runCLI(t, "import", src, "-o", out, "--force")
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "2 servers imported") || !strings.Contains(stdout, "1 renamed") ||
		!strings.Contains(stderr, `server "my/server" is imported as group my-server-2`) {
		t.Errorf("import says:\n%s%s", stdout, stderr)
	}
	f, _ := os.Open(out)
	defer f.Close()
	cfg, err := config.Parse(out, f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*config.Server{}
	for _, g := range cfg.Groups {
		got[g.Name] = g.Servers[0]
	}
	if s := got["my-server"]; s == nil || s.Command != "srv" || s.Env["PASSWORD"] != "pa$$word" || s.Args[0] != "--pass=pa$word" {
		t.Errorf("my-server: %+v", s)
	}
	if s := got["my-server-2"]; s == nil || s.Command != "other" {
		t.Errorf("my-server-2: %+v", s)
	}

	for name, data := range map[string][]byte{
		"deep.json":  []byte(strings.Repeat("[", 4<<20)),
		"large.json": []byte(`{"mcpServers": {}, "x": "` + strings.Repeat("a", clients.MaxFileSize) + `"}`),
	} {
		p := filepath.Join(home, name)
		os.WriteFile(p, data, 0o600)
		_, stderr, err := runCLI(t, "import", p, "-o", filepath.Join(home, "none.yaml"))
		if err == nil || strings.Contains(stderr, "goroutine") || !strings.Contains(stderr, map[bool]string{true: "nested too deeply", false: "too large"}[name == "deep.json"]) {
			t.Errorf("import %s: %v\n%.300s", name, err, stderr)
		}
	}
}
