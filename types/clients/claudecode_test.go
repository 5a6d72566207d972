package clients

import (
	"path/filepath"
	"slices"
	"testing"
)

// Turning servers of a project's .mcp.json off in its local settings and
// on again gives back the file as it was, byte for byte, whatever else it
// holds when it had no such list; names listed already are not added
// twice, nor taken out.
func TestDisableProjectServersThenEnable(t *testing.T) {
	for name, before := range map[string]string{
		"new file":      "",
		"other keys":    "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\"]\n  }\n}\n",
		"listed before": "{\n  // mine\n  \"disabledMcpjsonServers\": [\"old\", \"b\"],\n  \"x\": 1\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, added, err := DisableProjectServers([]byte(before), []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			list, err := disabledServers(out)
			if err != nil || !slices.Contains(list, "a") || !slices.Contains(list, "b") {
				t.Fatalf("disabled: %v %v\n%s", list, err, out)
			}
			want := []string{"a", "b"}
			if name == "listed before" {
				want = []string{"a"}
			}
			if !slices.Equal(added, want) {
				t.Errorf("added %v, want %v", added, want)
			}
			back, err := EnableProjectServers(out, added)
			if err != nil {
				t.Fatal(err)
			}
			if before == "" {
				if list, err := disabledServers(back); err != nil || len(list) != 0 {
					t.Errorf("back: %v %v\n%s", list, err, back)
				}
			} else if name == "listed before" {
				// The list is written anew (install's backup gives the bytes back).
				if list, _ := disabledServers(back); !slices.Equal(list, []string{"old", "b"}) {
					t.Errorf("back: %v\n%s", list, back)
				}
			} else if string(back) != before {
				t.Errorf("back:\n%q\nwant:\n%q", back, before)
			}
		})
	}
}

func TestClaudeCodeLocalIsTheProjectsEntryOfClaudeJSON(t *testing.T) {
	dir := t.TempDir()
	c, file, err := ClaudeCodeLocal(Env{Home: "/home/me"}, dir)
	if err != nil || file != filepath.Join("/home/me", ".claude.json") {
		t.Fatal(file, err)
	}
	data := []byte(`{"mcpServers": {"u": {"command": "user"}}, "projects": {"` + dir + `": {"mcpServers": {"l": {"command": "local"}}}}}`)
	servers, _, err := c.Read(data)
	if err != nil || len(servers) != 1 || servers[0].Name != "l" {
		t.Fatalf("%+v %v", servers, err)
	}
	out, orig, err := c.Install(data, Entry{Name: "dynamic-mcp", Command: "/bin/dm", Args: []string{"serve"}})
	if err != nil || string(compact(orig)) != `{"l":{"command":"local"}}` {
		t.Fatalf("%s %v", orig, err)
	}
	if user, _, _ := ReadAt(out, "mcpServers"); len(user) != 1 || user[0].Name != "u" {
		t.Errorf("the user scope changed: %+v\n%s", user, out)
	}
	if local, _, _ := c.Read(out); len(local) != 1 || local[0].Name != "dynamic-mcp" {
		t.Errorf("local scope: %+v", local)
	}
}
