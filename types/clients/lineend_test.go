package clients

import (
	"bytes"
	"strings"
	"testing"
)

// A Codex config.toml saved on Windows has CRLF line endings, maybe a
// UTF-8 byte order mark (which Codex's TOML parser skips): install,
// install again and uninstall edit it, and what they write has the
// file's line endings and keeps its mark.
func TestCodexInstallKeepsCRLFAndByteOrderMark(t *testing.T) {
	entry := Entry{Name: "dynamic-mcp", Command: `C:\bin\d.exe`, Args: []string{"serve"}}
	const src = "# mine\r\nmodel = \"o3\"\r\n\r\n[mcp_servers.a]\r\ncommand = \"x\"\r\n\r\n[profiles.fast]\r\nmodel = \"o3\"\r\n"
	bareLF := func(b []byte) bool { return bytes.Count(b, []byte("\n")) != bytes.Count(b, []byte("\r\n")) }
	servers := func(t *testing.T, c *Client, b []byte) string {
		t.Helper()
		s, _, err := c.Read(b)
		if err != nil {
			t.Fatalf("%v\n%q", err, b)
		}
		var names []string
		for _, x := range s {
			names = append(names, x.Name)
		}
		return strings.Join(names, ",")
	}
	for name, bom := range map[string]string{"CRLF": "", "CRLF and BOM": utf8BOM} {
		t.Run(name, func(t *testing.T) {
			c := &Client{format: tomlFormat{}}
			out, orig, err := c.Install([]byte(bom+src), entry)
			if err != nil {
				t.Fatal(err)
			}
			if bareLF(out) || !strings.HasPrefix(string(out), bom+CodexStartupGrace+" # dynamic-mcp install") || servers(t, c, out) != "dynamic-mcp" {
				t.Errorf("install wrote:\n%q", out)
			}
			// Install again, as install does over an install.
			base, err := c.Restore(out, orig, entry.Name)
			if err != nil {
				t.Fatal(err)
			}
			again, orig2, err := c.Install(base, entry)
			if err != nil || !bytes.Equal(again, out) || !bytes.Equal(orig2, orig) {
				t.Errorf("install again: %v\n%q\nwant\n%q", err, again, out)
			}
			// Uninstall after the user's edit (a merge, not the backup).
			edited := bytes.Replace(out, []byte("# mine\r\n"), []byte("# mine\r\n# edited\r\n"), 1)
			back, err := c.Restore(edited, orig, entry.Name)
			if err != nil {
				t.Fatal(err)
			}
			if bareLF(back) || !strings.HasPrefix(string(back), bom+"# mine\r\n") || strings.Contains(string(back), "dynamic-mcp") ||
				!strings.Contains(string(back), "# edited\r\n") || servers(t, c, back) != "a" {
				t.Errorf("uninstall wrote:\n%q", back)
			}
		})
	}
}

// A JSON client config saved with CRLF line endings (Claude Desktop's,
// Cursor's on Windows) keeps them: the lines install, install again and
// uninstall write end in CRLF, as do those turning off a project's
// servers in Claude Code's local settings.
func TestJSONInstallKeepsCRLF(t *testing.T) {
	entry := Entry{Name: "dynamic-mcp", Command: `C:\bin\d.exe`, Args: []string{"serve"}}
	const src = "{\r\n  // mine\r\n  \"theme\": \"dark\",\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\",\r\n      \"args\": [\"-y\", \"a\"]\r\n    }\r\n  }\r\n}\r\n"
	bareLF := func(b []byte) bool { return bytes.Count(b, []byte("\n")) != bytes.Count(b, []byte("\r\n")) }
	c := &Client{format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}}
	out, orig, err := c.Install([]byte(src), entry)
	if err != nil {
		t.Fatal(err)
	}
	if bareLF(out) || !strings.Contains(string(out), "\"dynamic-mcp\": {\r\n") || !strings.HasPrefix(string(out), "{\r\n  // mine\r\n") {
		t.Errorf("install wrote:\n%q", out)
	}
	edited := bytes.Replace(out, []byte("// mine\r\n"), []byte("// mine\r\n  // edited\r\n"), 1)
	back, err := c.Restore(edited, orig, entry.Name)
	if err != nil {
		t.Fatal(err)
	}
	if bareLF(back) || strings.Contains(string(back), "dynamic-mcp") || !strings.Contains(string(back), "// edited\r\n") || !strings.Contains(string(back), "\"a\": {\r\n") {
		t.Errorf("uninstall wrote:\n%q", back)
	}
	settings, _, err := DisableProjectServers([]byte("{\r\n  \"permissions\": {}\r\n}\r\n"), []string{"p", "q"})
	if err != nil {
		t.Fatal(err)
	}
	if bareLF(settings) || !strings.Contains(string(settings), "\"p\",\r\n") {
		t.Errorf("local settings written:\n%q", settings)
	}
}
