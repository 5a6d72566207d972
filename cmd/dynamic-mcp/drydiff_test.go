package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dryRunHome is a home with a hub config of one group and the client
// file at rel holding data; it returns the home and the config's path.
func dryRunHome(t *testing.T, rel, data string) (string, string) {
	t.Helper()
	home := t.TempDir()
	path := filepath.Join(home, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "hub.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "groups:\n  f: { description: fake, command: %q }\n", fakeBin), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, cfg
}

// A client file written on one line (minified JSON) is diffed indented:
// the servers removed and the entry added, each on lines of its own, not
// the whole file as one line removed and another added.
func TestDryRunOfAOneLineFileIsIndented(t *testing.T) {
	t.Parallel()
	file := `{"theme":"dark","mcpServers":{"gh":{"command":"npx","args":["-y","gh-server"]},"fs":{"command":"npx","args":["-y","fs-server"]}}}`
	home, cfg := dryRunHome(t, ".cursor/mcp.json", file)
	out, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, errOut)
	}
	for _, want := range []string{
		"(after install; both shown indented: the file is on one line)\n",
		`   "theme": "dark",` + "\n",
		`-    "gh": {` + "\n",
		`-        "gh-server"` + "\n",
		`-    "fs": {` + "\n",
		`+    "dynamic-mcp": {` + "\n",
		`+        "` + cfg + `"` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the diff:\n%s", want, out)
		}
	}
	if strings.Contains(out, file) {
		t.Errorf("the diff has the file's one line:\n%s", out)
	}
}

// A long file (Claude Code's ~/.claude.json) is diffed as hunks, as diff
// -u prints them: the changed lines with three lines around them, not
// every line of the file.
func TestDryRunShowsTheChangeNotTheWholeFile(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{\n")
	for i := range 200 {
		fmt.Fprintf(&b, "  \"setting%03d\": %d,\n", i, i)
	}
	b.WriteString("  \"mcpServers\": {\n    \"gh\": {\n      \"command\": \"npx\"\n    }\n  },\n")
	for i := range 200 {
		fmt.Fprintf(&b, "  \"later%03d\": %d,\n", i, i)
	}
	b.WriteString("  \"last\": 0\n}\n")
	home, cfg := dryRunHome(t, ".claude.json", b.String())
	out, errOut, err := runBinary(t, home, "install", "claude-code", "-c", cfg, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, errOut)
	}
	for _, want := range []string{
		"\n@@ -200,8 +200,13 @@\n   \"setting198\": 198,\n   \"setting199\": 199,\n   \"mcpServers\": {\n-    \"gh\": {\n",
		"+    \"dynamic-mcp\": {\n",
		"     }\n   },\n   \"later000\": 0,\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the diff:\n%s", want, out)
		}
	}
	if strings.Contains(out, "setting197") || strings.Contains(out, "later001") || strings.Count(out, "\n") != 18 {
		t.Errorf("the diff shows more than the change and three lines around it:\n%s", out)
	}
}
