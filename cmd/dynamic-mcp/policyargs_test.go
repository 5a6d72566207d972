package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// Issue 13: spellings server-filesystem takes for the same file (relative
// to its root, a trailing / or /.) and read_multiple_files' paths are
// denied by the rules that name the file, in flat mode and through
// call_dynamic_tool alike.
func TestPolicyArgumentSpellingsWithFilesystemServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	os.WriteFile(secret, []byte("hunter2"), 0o600)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("open notes"), 0o600)
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			c := startHub(t, fmt.Sprintf(`
mode: %s
settings: { `+nodeWaits+` }
groups:
  files:
    description: Files
    command: node
    args: %s
    cwd: %q
    policy:
      - { name: no-secrets, action: deny, tool: "read_*", args: { path: "**/secret*" }, description: "secrets are off limits" }
      - { name: no-secrets-anywhere, action: deny, tool: "read_multiple_files", args: { "*": "**/secret*" }, description: "secrets are off limits" }
`, mode, yamlList(referenceServer(t, "server-filesystem", root)[1:]), root))
			c.initialize("2025-06-18")
			var call func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails)
			if mode == "flat" {
				c.waitFlatTools(14)
				call = func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
					return c.request("tools/call", map[string]any{"name": "files__" + tool, "arguments": args})
				}
			} else {
				c.waitGroupsReady("files")
				call = func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
					return c.request("tools/call", map[string]any{"name": "call_dynamic_tool", "arguments": map[string]any{"group": "files", "name": tool, "args": args}})
				}
			}
			// The server reads a relative path against its root, so a
			// relative spelling reaches the file: the control.
			res, rpcErr := call("read_text_file", map[string]any{"path": "notes.txt"})
			if text, _ := toolText(t, res); rpcErr != nil || text != "open notes" {
				t.Fatalf("relative read of notes.txt: %+v %s", rpcErr, res)
			}
			for _, tc := range []struct {
				tool string
				args map[string]any
			}{
				{"read_text_file", map[string]any{"path": secret}},
				{"read_text_file", map[string]any{"path": "secret.txt"}},
				{"read_text_file", map[string]any{"path": "./secret.txt"}},
				{"read_text_file", map[string]any{"path": secret + "/"}},
				{"read_text_file", map[string]any{"path": secret + "/."}},
				{"read_text_file", map[string]any{"path": filepath.Join(root, "x") + "/../secret.txt"}},
				{"read_multiple_files", map[string]any{"paths": []string{filepath.Join(root, "notes.txt"), "secret.txt"}}},
			} {
				res, rpcErr := call(tc.tool, tc.args)
				if rpcErr == nil || rpcErr.Code != -32001 || strings.Contains(string(res), "hunter2") {
					t.Errorf("%s %v: %+v %s", tc.tool, tc.args, rpcErr, res)
				}
			}
		})
	}
}
