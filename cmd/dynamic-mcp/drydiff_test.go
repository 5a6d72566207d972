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

// The dry run's diff shows what install then writes, byte for byte: of a
// file written on one line (minified JSON), that line removed and the
// lines written in its place; of a file with CRLF line endings, its lines
// with them.
func TestDryRunShowsWhatInstallWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file string }{
		{"one line", `{"theme":"dark","mcpServers":{"gh":{"command":"npx","args":["-y","gh-server"]},"fs":{"command":"npx","args":["-y","fs-server"]}}}`},
		{"CRLF", "{\r\n  \"theme\": \"dark\",\r\n  \"mcpServers\": {\r\n    \"gh\": {\"command\": \"npx\"}\r\n  }\r\n}\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, cfg := dryRunHome(t, ".cursor/mcp.json", tc.file)
			out, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--dry-run")
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, errOut)
			}
			if _, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--force"); err != nil {
				t.Fatalf("install: %v\n%s", err, errOut)
			}
			written, err := os.ReadFile(filepath.Join(home, ".cursor/mcp.json"))
			if err != nil {
				t.Fatal(err)
			}
			// The file is small: its one hunk holds every line of it.
			var old, new strings.Builder
			_, hunk, _ := strings.Cut(out, "@@\n")
			for _, l := range strings.SplitAfter(hunk, "\n") {
				if l == "" {
					continue
				}
				if l[0] != '+' {
					old.WriteString(l[1:])
				}
				if l[0] != '-' {
					new.WriteString(l[1:])
				}
			}
			if strings.Contains(tc.file, "\r\n") && strings.Count(string(written), "\n") != strings.Count(string(written), "\r\n") {
				t.Errorf("a CRLF file written with LF lines:\n%q", written)
			}
			// (Whether the file ends in a line break the diff does not say.)
			lf := func(s string) string { return strings.TrimSuffix(s, "\n") }
			if lf(old.String()) != lf(tc.file) || lf(new.String()) != lf(string(written)) {
				t.Errorf("the diff:\n%q\nthe file before:\n%q\nwritten:\n%q", out, tc.file, written)
			}
		})
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

// The dry run's diff masks the secrets written literally in the client's
// file, on the lines removed (the servers install replaces: an env
// token, an Authorization header, a token as an arg) as on the lines
// added and around them, in JSON as in Codex's TOML; what is no secret (a
// ${VAR}, a command) is shown as it is.
func TestDryRunMasksSecrets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, old, new string
		want, hidden   []string
	}{{
		name: "json",
		old: `{
  "mcpServers": {
    "gh": {
      "command": "npx",
      "args": ["-y", "gh-server", "--token", "ghp_argToken000000000000000"],
      "env": {"GITHUB_TOKEN": "ghp_envToken000000000000000", "HOME_DIR": "/home/me", "FROM_ENV": "${MY_TOKEN}"},
      "headers": {
        "Authorization": "Bearer abc.def.ghi-123",
        "X-Api-Key": "plainvalue123"
      }
    }
  }
}`,
		new: `{
  "mcpServers": {
    "dynamic-mcp": {"command": "dynamic-mcp", "env": {"SLACK_TOKEN": "xoxb-added-1234567890"}}
  }
}`,
		want: []string{
			`-      "args": ["-y", "gh-server", "--token", "[redacted]"],`,
			`-      "env": {"GITHUB_TOKEN": "[redacted]", "HOME_DIR": "/home/me", "FROM_ENV": "${MY_TOKEN}"},`,
			`-        "Authorization": "[redacted]",`,
			`-        "X-Api-Key": "[redacted]"`,
			`+    "dynamic-mcp": {"command": "dynamic-mcp", "env": {"SLACK_TOKEN": "[redacted]"}}`,
		},
		hidden: []string{"ghp_argToken", "ghp_envToken", "abc.def.ghi-123", "plainvalue123", "xoxb-added"},
	}, {
		name: "toml",
		old: `model = "o3"
[mcp_servers.gh]
command = "npx"
env = { GITHUB_TOKEN = "ghp_envToken000000000000000", "PATH_X" = '/usr/bin' }
[mcp_servers.gh.http_headers]
'Authorization' = 'Bearer abc.def.ghi-123'
`,
		new: `model = "o3"
[mcp_servers.dynamic-mcp]
command = "dynamic-mcp"
`,
		want: []string{
			` model = "o3"`,
			`-env = { GITHUB_TOKEN = "[redacted]", "PATH_X" = '/usr/bin' }`,
			`-'Authorization' = '[redacted]'`,
			`+command = "dynamic-mcp"`,
		},
		hidden: []string{"ghp_envToken", "abc.def.ghi-123"},
	}, {
		// A value is masked by its key, wherever its line: the old code
		// read each line alone, and showed these (no token by their look).
		name: "json value on the line after its key",
		old:  "{\r\n  \"mcpServers\": {\"gh\": {\"command\": \"npx\", \"env\": {\"API_KEY\":\r\n    \"plainSecret123\", \"HOME_DIR\":\r\n    \"/home/me\"}}}\r\n}\r\n",
		new:  "{\r\n  \"mcpServers\": {\"dynamic-mcp\": {\"command\": \"dynamic-mcp\"}}\r\n}\r\n",
		want: []string{
			"-    \"[redacted]\", \"HOME_DIR\":\r",
			"-    \"/home/me\"}}}\r",
		},
		hidden: []string{"plainSecret123"},
	}, {
		// JSON with comments and a trailing comma (VS Code's mcp.json,
		// Zed's settings): masked by key as JSON is, the comments and the
		// comma read as the spaces they stand for.
		name: "json with comments, a value on the line after its key",
		old:  "{\n  // my servers\n  \"servers\": {\"gh\": {\"command\": \"npx\", \"env\": {\"API_KEY\": /* the key */\n    \"plainSecret123\",}}},\n}\n",
		new:  "{\n  // my servers\n  \"servers\": {\"dynamic-mcp\": {\"command\": \"dynamic-mcp\"}},\n}\n",
		want: []string{
			"-    \"[redacted]\",}}},",
		},
		hidden: []string{"plainSecret123"},
	}, {
		name: "toml multi-line string",
		old: `[mcp_servers.gh]
command = "npx"
env = { "PATH_X" = '/usr/bin' }
[mcp_servers.gh.http_headers]
Authorization = """
Basic plainSecret123
second line"""
X-Note = '''
not secret'''
`,
		new: `[mcp_servers.dynamic-mcp]
command = "dynamic-mcp"
`,
		want: []string{
			`-Authorization = """`,
			`-[redacted]`,
			`-[redacted]"""`,
			`-X-Note = '''`,
			`-not secret'''`,
		},
		hidden: []string{"plainSecret123", "second line"},
	}, {
		// A secret found by its name is masked where it is written again
		// under a name that says nothing, in a comment, and on the lines
		// of the other file: the old code showed each of these.
		name: "secret written elsewhere too",
		old:  "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"API_KEY\": \"hunter2secret\", \"NOTE\": \"hunter2secret\"}}},\n\"tips\": \"key hunter2secret\"}\n",
		new:  "{\"mcpServers\": {\"dynamic-mcp\": {\"command\": \"dynamic-mcp\"}},\n\"tips\": \"key hunter2secret!\"}\n",
		want: []string{
			`-{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "[redacted]", "NOTE": "[redacted]"}}},`,
			`-"tips": "key [redacted]"}`,
			`+"tips": "key [redacted]!"}`,
		},
		hidden: []string{"hunter2secret"},
	}, {
		name: "toml secret written elsewhere too",
		old: `# my key: plainSecret123
[mcp_servers.gh]
command = "npx"
env = { API_KEY = "plainSecret123", OTHER = "plainSecret123" }
`,
		new: `[mcp_servers.dynamic-mcp]
command = "dynamic-mcp"
`,
		want: []string{
			`-# my key: [redacted]`,
			`-env = { API_KEY = "[redacted]", OTHER = "[redacted]" }`,
		},
		hidden: []string{"plainSecret123"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			out := dryRunDiff("file", []byte(c.old), []byte(c.new))
			for _, h := range c.hidden {
				if strings.Contains(out, h) {
					t.Errorf("the diff shows the secret %q:\n%s", h, out)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("want the line %q in the diff:\n%s", w, out)
				}
			}
		})
	}
}

// install --dry-run masks a token of the server entry it replaces.
func TestDryRunOfInstallMasksSecrets(t *testing.T) {
	t.Parallel()
	file := `{"mcpServers":{"gh":{"command":"npx","env":{"GITHUB_TOKEN":"ghp_envToken000000000000000"}}}}`
	home, cfg := dryRunHome(t, ".cursor/mcp.json", file)
	out, errOut, err := runBinary(t, home, "install", "cursor", "-c", cfg, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, errOut)
	}
	if strings.Contains(out, "ghp_envToken") || !strings.Contains(out, `-{"mcpServers":{"gh":{"command":"npx","env":{"GITHUB_TOKEN":"[redacted]"}}}}`+"\n") {
		t.Errorf("the diff does not mask the token:\n%s", out)
	}
}

// Whatever a client's file holds, its masked lines are its lines one for
// one (the diff prints them in their place), and a file is never cause
// for a panic.
func FuzzMaskedLines(f *testing.F) {
	f.Add([]byte("{\"env\": {\"API_KEY\":\n \"plainSecret123\"}}\n"))
	f.Add([]byte("[a]\nAuthorization = \"\"\"\r\nBasic x\r\ny\"\"\"\r\n"))
	f.Add([]byte(`{"a":["ghp_argToken0000000000000000"],"b":{"TOKEN":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := len(maskedLines(data, secretTexts(data))), len(splitLines(data)); got != want {
			t.Errorf("%d masked lines of %d", got, want)
		}
	})
}
