package clients

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// Install makes Codex's first turn wait for the hub's start: it sets
// mcp_optional_startup_grace_ms = 0 at the top level of config.toml
// (before every table, so that no table takes it), unless the file sets
// it already; restore takes out the line install wrote, and only that.
func TestCodexInstallSetsTheStartupGrace(t *testing.T) {
	entry := Entry{Name: "dynamic-mcp", Command: "/bin/d", Args: []string{"serve"}}
	grace := func(t *testing.T, data []byte) (int64, bool) {
		t.Helper()
		var doc struct {
			Grace *int64 `toml:"mcp_optional_startup_grace_ms"`
		}
		if err := toml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		if doc.Grace == nil {
			return 0, false
		}
		return *doc.Grace, true
	}
	for name, src := range map[string]string{
		"empty":            "",
		"tables only":      "[mcp_servers.a]\ncommand = \"x\"\n\n[profiles.fast]\nmodel = \"o3\"\n",
		"keys and comment": "# my settings\nmodel = \"o3\"\n\n[mcp_servers.a]\ncommand = \"x\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := &Client{format: tomlFormat{}}
			out, orig, err := c.Install([]byte(src), entry)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := grace(t, out); !ok || v != 0 {
				t.Errorf("install left mcp_optional_startup_grace_ms at top level %d (set %v), want 0:\n%s", v, ok, out)
			}
			if !strings.HasPrefix(string(out), CodexStartupGrace+" # dynamic-mcp install") {
				t.Errorf("install did not put the setting at the top:\n%s", out)
			}
			again, _, err := c.Install(out, entry)
			if err != nil || strings.Count(string(again), CodexStartupGrace) != 1 {
				t.Errorf("installed twice: %v\n%s", err, again)
			}
			back, err := c.Restore(out, orig, entry.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := grace(t, back); ok || strings.Contains(string(back), "dynamic-mcp") {
				t.Errorf("restore kept the setting install wrote:\n%s", back)
			}
		})
	}
	// The user's own value stays, through install and restore.
	for _, own := range []string{"mcp_optional_startup_grace_ms = 5000\n", CodexStartupGrace + "\n"} {
		src := "model = \"o3\"\n" + own + "\n[mcp_servers.a]\ncommand = \"x\"\n"
		c := &Client{format: tomlFormat{}}
		out, orig, err := c.Install([]byte(src), entry)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "dynamic-mcp install") || !strings.Contains(string(out), own) {
			t.Errorf("install changed the user's %q:\n%s", own, out)
		}
		back, err := c.Restore(out, orig, entry.Name)
		if err != nil || !strings.Contains(string(back), own) {
			t.Errorf("restore took the user's %q: %v\n%s", own, err, back)
		}
	}
}
