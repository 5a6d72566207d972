package clients

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// uninstall merges: the recorded servers come back in their order, with
// the servers added since install kept, and the installed entry dropped.
func TestRestoreKeepsServersAddedSinceInstall(t *testing.T) {
	entry := Entry{Name: "dynamic-mcp", Command: "/bin/d", Args: []string{"serve"}}
	t.Run("json", func(t *testing.T) {
		c := &Client{format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}}
		src := `{"theme": "dark", "mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}, "mid": {"command": "old"}}}`
		out, orig, err := c.Install([]byte(src), entry)
		if err != nil {
			t.Fatal(err)
		}
		// The user adds a server and redefines one after install.
		out = []byte(strings.Replace(string(out), `"dynamic-mcp": {`, `"added": {"command": "new"}, "mid": {"command": "edited"}, "dynamic-mcp": {`, 1))
		back, err := c.Restore(out, orig, "dynamic-mcp")
		if err != nil {
			t.Fatal(err)
		}
		servers, _, err := c.Read(back)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(servers); got != "zeta alpha mid added" {
			t.Errorf("servers %q, want the recorded order then the added one\n%s", got, back)
		}
		if servers[2].Command != "edited" || !strings.Contains(string(back), `"theme": "dark"`) {
			t.Errorf("restored:\n%s", back)
		}
	})
	t.Run("toml", func(t *testing.T) {
		c := &Client{format: tomlFormat{}}
		src := "model = \"o3\"\n\n[mcp_servers.zeta]\ncommand = \"z\"\n\n[mcp_servers.mid]\ncommand = \"old\"\n[mcp_servers.mid.env]\nA = \"1\"\n"
		out, orig, err := c.Install([]byte(src), entry)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "\n[mcp_servers.added]\ncommand = \"new\"\n\n[mcp_servers.mid]\ncommand = \"edited\"\n"...)
		back, err := c.Restore(out, orig, "dynamic-mcp")
		if err != nil {
			t.Fatal(err)
		}
		servers, _, err := c.Read(back)
		if err != nil {
			t.Fatalf("%v\n%s", err, back)
		}
		if got := names(servers); got != "zeta added mid" || !strings.HasPrefix(string(back), "model = \"o3\"") {
			t.Errorf("servers %q\n%s", got, back)
		}
		for _, s := range servers {
			if s.Name == "mid" && (s.Command != "edited" || len(s.Env) != 0) {
				t.Errorf("mid kept its recorded definition: %+v", s)
			}
		}
	})
}

func names(servers []Server) string {
	var n []string
	for _, s := range servers {
		n = append(n, s.Name)
	}
	return strings.Join(n, " ")
}

// A literal $ must reach the server unchanged through the hub's ${VAR}
// substitution, where $$ is a literal $.
func TestNormalizeEscapesLiteralDollar(t *testing.T) {
	for in, want := range map[string]string{
		"pa$$word":           "pa$$$$word",
		"pa$word":            "pa$$word",
		"end$":               "end$$",
		"${HOME}/x":          "${HOME}/x",
		"${env:KEY}":         "${KEY}",
		"${A:-de$f}$":        "${A:-de$f}$$",
		"${not a name}":      "$${not a name}",
		"cost: $5, ${X} $$Y": "cost: $$5, ${X} $$$$Y",
	} {
		s := Server{Name: "s", Command: in, Args: []string{in}, URL: in, Cwd: in,
			Env: map[string]string{"PASSWORD": in}, Headers: map[string]string{"X": in}}
		normalize(&s)
		for what, got := range map[string]string{"command": s.Command, "args": s.Args[0], "url": s.URL, "cwd": s.Cwd, "env": s.Env["PASSWORD"], "headers": s.Headers["X"]} {
			if got != want {
				t.Errorf("%s %q became %q, want %q", what, in, got, want)
			}
		}
	}
}

// Nesting past MaxDepth and files over MaxFileSize are refused before
// hujson or go-toml (both recursive) see them.
func TestLimitsBeforeParsing(t *testing.T) {
	deep := func(open string, n int) []byte { return []byte(strings.Repeat(open, n)) }
	jsonC := &Client{format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}}
	tomlC := &Client{format: tomlFormat{}}
	for _, tc := range []struct {
		name string
		c    *Client
		data []byte
		want error
	}{
		{"4 MB of [", jsonC, deep("[", 4<<20), ErrTooDeep},
		{"json objects", jsonC, []byte(`{"a":` + strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth+1)), ErrTooDeep},
		{"toml arrays", tomlC, append([]byte("a = "), deep("[", 4<<20)...), ErrTooDeep},
		{"too large", jsonC, []byte(`{"x":"` + strings.Repeat("a", MaxFileSize) + `"}`), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := tc.c.Read(tc.data); !errors.Is(err, tc.want) {
				t.Errorf("Read: %v, want %v", err, tc.want)
			}
			if _, _, err := tc.c.Install(tc.data, Entry{Name: "d", Command: "/bin/d"}); !errors.Is(err, tc.want) {
				t.Errorf("Install: %v, want %v", err, tc.want)
			}
		})
	}
	// Brackets in strings and comments do not count; the limit itself is fine.
	ok := []byte("// [[[[\n{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"" + strings.Repeat("[", 500) + "\"]}}, /* {{{{ */ \"n\": " +
		strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "}")
	if _, _, err := jsonC.Read(ok); err != nil {
		t.Errorf("within the limits: %v", err)
	}
	okTOML := []byte("# [[[[\nx = \"" + strings.Repeat("[", 500) + "\"\ny = '''\n" + strings.Repeat("{", 500) + "\n'''\n[mcp_servers.a]\ncommand = \"x\"\n")
	if s, _, err := tomlC.Read(okTOML); err != nil || len(s) != 1 {
		t.Errorf("toml within the limits: %v %v", s, err)
	}

	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "10 MiB") {
		t.Errorf("ReadFile: %v", err)
	}
}
