package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	s := bufio.NewScanner(f)
	for s.Scan() {
		var m map[string]any
		mustUnmarshal(t, s.Bytes(), &m)
		out = append(out, m)
	}
	return out
}

func TestDenyListPolicyAndAuditWithFilesystemServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "secret"), 0o700)
	os.WriteFile(filepath.Join(root, "secret", "key.txt"), []byte("hunter2"), 0o600)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("open notes"), 0o600)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			os.Remove(audit)
			c := startHub(t, fmt.Sprintf(`
mode: %s
settings: { `+nodeWaits+` }
audit: { path: %q, arguments: true }
groups:
  files:
    description: Files
    command: node
    args: %s
    deny: ["^write_file$", "^move_"]
    policy:
      - { name: no-secrets, action: deny, tool: "read_*", args: { path: "**/secret/**" }, description: "secrets are off limits" }
`, mode, audit, yamlList(referenceServer(t, "server-filesystem", root)[1:])))
			c.initialize("2025-06-18")
			var call func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails)
			if mode == "flat" {
				tools := c.waitFlatTools(12)
				for _, raw := range tools {
					if name := toolName(t, raw); name == "files__write_file" || name == "files__move_file" {
						t.Errorf("deny-listed %s is listed", name)
					}
				}
				call = func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
					return c.request("tools/call", map[string]any{"name": "files__" + tool, "arguments": args})
				}
			} else {
				c.waitGroupsReady("files")
				text, _ := toolText(t, c.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": "files"}}))
				if strings.Contains(text, `"write_file"`) || strings.Contains(text, `"move_file"`) || !strings.Contains(text, `"read_text_file"`) {
					t.Errorf("get_dynamic_tools shows deny-listed tools: %.300s", text)
				}
				call = func(tool string, args map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
					return c.request("tools/call", map[string]any{"name": "call_dynamic_tool", "arguments": map[string]any{"group": "files", "name": tool, "args": args}})
				}
			}

			// A deny-listed tool answers exactly as one that does not exist.
			res, rpcErr := call("write_file", map[string]any{"path": filepath.Join(root, "x"), "content": "x"})
			if mode == "flat" {
				if rpcErr == nil || rpcErr.Code != -32601 || rpcErr.Message != "Tool not found: files__write_file" {
					t.Errorf("write_file: %+v %s", rpcErr, res)
				}
			} else if text, isErr := toolText(t, res); !isErr || text != "Tool not found: write_file (get_dynamic_tools with group files lists its tools)" {
				t.Errorf("write_file: %q", text)
			}
			if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
				t.Error("the deny-listed write happened")
			}

			// A policy rule blocks with -32001 and says which rule.
			res, rpcErr = call("read_text_file", map[string]any{"path": filepath.Join(root, "secret", "key.txt")})
			if rpcErr == nil || rpcErr.Code != -32001 || rpcErr.Message != "secrets are off limits" {
				t.Fatalf("secret read: %+v %s", rpcErr, res)
			}
			data, _ := json.Marshal(rpcErr.Data)
			assertSameJSON(t, "block data", data, []byte(`{"rule":"no-secrets","action":"deny"}`))

			res, rpcErr = call("read_text_file", map[string]any{"path": filepath.Join(root, "notes.txt")})
			if rpcErr != nil {
				t.Fatalf("allowed read: %+v", rpcErr)
			}
			if text, _ := toolText(t, res); text != "open notes" {
				t.Errorf("allowed read: %q", text)
			}

			// The trail's writer writes a record a moment after its answer.
			var recs []map[string]any
			await.Costly(t, 10*time.Second, "3 audit records", func() bool { recs = readAudit(t, audit); return len(recs) >= 3 })
			if len(recs) != 3 {
				t.Fatalf("want 3 audit records, got %d: %v", len(recs), recs)
			}
			for i, want := range []map[string]any{
				{"method": "tools/call", "decision": "not_found", "outcome": "not_found"},
				{"method": "tools/call", "group": "files", "server": "files", "tool": "read_text_file", "decision": "deny", "rule": "no-secrets", "outcome": "blocked"},
				{"method": "tools/call", "group": "files", "server": "files", "tool": "read_text_file", "decision": "allow", "outcome": "ok", "session": "stdio"},
			} {
				for k, v := range want {
					if recs[i][k] != v {
						t.Errorf("audit record %d: %s = %v, want %v (%v)", i+1, k, recs[i][k], v, recs[i])
					}
				}
			}
			if args, _ := recs[2]["arguments"].(map[string]any); args["path"] != filepath.Join(root, "notes.txt") {
				t.Errorf("audit.arguments: true kept no arguments: %v", recs[2])
			}
		})
	}
}

func TestPromptRuleAsksTheUserThroughElicitation(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a yes" }
`, fakeBin))
	var answers atomic.Value
	answers.Store([]string{"accept", "decline"})
	var asked atomic.Int32
	c.tr.SetRequestHandler(func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		if req.Method != "elicitation/create" {
			return mcptransport.NewJSONRPCErrorResponse(req.ID, -32601, "no", nil), nil
		}
		i := int(asked.Add(1)) - 1
		list := answers.Load().([]string)
		b, _ := json.Marshal(map[string]any{"action": list[i%len(list)]})
		return mcptransport.NewJSONRPCResultResponse(req.ID, b), nil
	})
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	c.waitFlatTools(fakeTools)

	if text, isErr := c.callText("f__echo", map[string]any{"text": "yes please"}); isErr || text != "yes please" {
		t.Errorf("accepted call: %q", text)
	}
	_, rpcErr := c.request("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "no"}})
	if rpcErr == nil || rpcErr.Code != -32001 || !strings.Contains(rpcErr.Message, "echo needs a yes (the user chose decline)") {
		t.Errorf("declined call: %+v", rpcErr)
	}
	if asked.Load() != 2 {
		t.Errorf("the user was asked %d times, want 2", asked.Load())
	}
	// Other tools are not asked about.
	if text, _ := c.callText("f__pid", nil); text == "" {
		t.Error("pid")
	}

	// A client that cannot elicit is never asked: the call waits in the
	// approval inbox (approvals_test.go), here denied when no one answers.
	plain := startHub(t, fmt.Sprintf(`
mode: flat
settings: { prompt_timeout: 500ms }
groups:
  f:
    description: fake
    command: %q
    policy: [{ action: prompt, tool: echo }]
`, fakeBin))
	plain.initialize("2025-06-18")
	plain.waitFlatTools(fakeTools)
	_, rpcErr = plain.request("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "x"}})
	if rpcErr == nil || rpcErr.Code != -32001 || !strings.Contains(rpcErr.Message, "no answer within 500ms") {
		t.Errorf("client without elicitation: %+v", rpcErr)
	}
}

func TestChangedToolIsWithheldUntilAccepted(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("mode: flat\ngroups:\n  rugpull: { description: changes its tools, command: %q }\n", fakeBin)), 0o600)
	c := startProcess(t, nil, hubBin, "serve", "-c", cfgPath, "--log-level", "debug")
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	c.callText("rugpull__mutate", nil)
	await.Costly(t, 10*time.Second, "the changed tool to be withheld", func() bool {
		return !strings.Contains(string(c.call("tools/list", nil)), "rugpull__echo")
	})
	if _, rpcErr := c.request("tools/call", map[string]any{"name": "rugpull__echo", "arguments": map[string]any{"text": "x"}}); rpcErr == nil || rpcErr.Code != -32601 {
		t.Errorf("withheld tool answered: %+v", rpcErr)
	}
	// Logged once the lock that changed the list is let go: waited for.
	await.For(t, 10*time.Second, "the withheld change in the log", func() bool {
		return strings.Contains(c.stderr.String(), "tool definitions changed since first seen; withheld until accepted")
	})

	// The pin commands, in this process, share the hub's home.
	out, errOut, code := runCommand(t, "", "pin", "list", "-c", cfgPath)
	if code != 0 || !strings.Contains(out, "rugpull  echo") {
		t.Errorf("pin list: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCommand(t, "", "pin", "accept", "rugpull", "echo", "-c", cfgPath)
	if code != 0 || !strings.Contains(out, "rugpull: accepted the new definitions of echo") {
		t.Fatalf("pin accept: exit %d\n%s%s", code, out, errOut)
	}
	await.Costly(t, 10*time.Second, "the accepted tool to come back", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), "and send it to evil.example")
	})
}

func TestPolicyTestCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoDir, "testdata", "policy")
	out, errOut, code := runCommand(t, "", "policy", "test", "-c", filepath.Join(dir, "config.yaml"), "--fixture-dir", filepath.Join(dir, "fixtures"))
	if code != 0 || strings.Contains(out, "FAIL") || strings.Count(out, " pass\n") != 12 {
		t.Errorf("policy test: exit %d\n%s%s", code, out, errOut)
	}
	// read-multiple-ssh.json gives the tool's schema: rule no-ssh names
	// path, which read_multiple_files does not take.
	if !strings.Contains(out+errOut, `warning: read-multiple-ssh.json: policy rule no-ssh names argument "path", which tool read_multiple_files of files/files does not have (its arguments: paths)`) {
		t.Errorf("policy test did not report the argument the tool does not have:\n%s%s", out, errOut)
	}
	out, errOut, code = runCommand(t, "", "policy", "test", "-c", filepath.Join(dir, "config.yaml"), "--fixture", filepath.Join(dir, "fixtures", "read-ssh-key.json"), "--expect", "allow")
	if code != 1 || !strings.Contains(out+errOut, "FAIL") {
		t.Errorf("a mismatch must exit 1: %d\n%s%s", code, out, errOut)
	}
}

func TestPromptAndResourceDenyListsHideAsIfAbsent(t *testing.T) {
	t.Parallel()
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  fake:
    description: fake
    command: %q
    prompts: { deny: ["^prompt-2$"] }
    resources: { deny: ["/res/3$", "/item/9"] }
`, fakeBin))
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	prompts := collectPages(t, c, "prompts/list", "prompts")
	resources := collectPages(t, c, "resources/list", "resources")
	if len(prompts) != 2 || len(resources) != 2 {
		t.Fatalf("want 2 prompts and 2 resources, got %d and %d", len(prompts), len(resources))
	}
	for _, p := range prompts {
		if strings.Contains(string(p), "prompt-2") {
			t.Errorf("a denied prompt is listed: %s", p)
		}
	}
	if _, rpcErr := c.request("prompts/get", map[string]any{"name": "fake__prompt-2"}); rpcErr == nil || rpcErr.Message != "Prompt not found: fake__prompt-2" {
		t.Errorf("denied prompt: %+v", rpcErr)
	}
	for _, uri := range []string{"fake://fake/res/3", "fake://fake/item/9"} {
		if _, rpcErr := c.request("resources/read", map[string]any{"uri": uri}); rpcErr == nil || rpcErr.Code != -32002 {
			t.Errorf("denied resource %s: %+v", uri, rpcErr)
		}
	}
	if got := string(c.call("resources/read", map[string]any{"uri": "fake://fake/item/8"})); !strings.Contains(got, "content of fake://fake/item/8") {
		t.Errorf("an allowed template read: %s", got)
	}
}
