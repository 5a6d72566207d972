package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestArgsCheckedAgainstFilesystemServer puts the hub, in flat and
// dynamic mode, in front of the official filesystem server, and calls its
// read_text_file with go-sdk's client: arguments that break the tool's own
// inputSchema (path a number, path missing) are answered by the hub with
// an isError result naming each path at fault and carrying the schema the
// server lists, and never reach the server; arguments that fit reach it
// byte for byte (a key order and an escape json.Marshal would not
// write), and its answer comes back as the server gives it directly. The
// server lists a draft-07 schema (zod's), which the check reads as such.
func TestArgsCheckedAgainstFilesystemServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "café.txt"), []byte("première ligne\nseconde\ntroisième\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := referenceServer(t, "server-filesystem", root)
	// A valid call's arguments, as the client sends them: path before
	// head and é escaped, which the hub must not re-encode.
	good := json.RawMessage(`{"path":"` + root + `/caf\u00e9.txt","head":2}`)
	bad := []struct {
		args json.RawMessage
		want string
	}{
		{json.RawMessage(`{"path":42}`), "- /path: expected string, got number"},
		{json.RawMessage(`{"head":2}`), "- /path: missing property 'path'"},
	}

	ctx, cancel := untilHung(t)
	defer cancel()
	direct := connectGoSDKCommand(ctx, t, server, nil, "")
	// The hub's client speaks the era the server does, whose results
	// carry no resultType.
	era := direct.InitializeResult().ProtocolVersion
	list, err := direct.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema []byte
	for _, tool := range list.Tools {
		if tool.Name == "read_text_file" {
			schema, _ = json.Marshal(tool.InputSchema)
		}
	}
	if schema == nil {
		t.Fatalf("the filesystem server lists no read_text_file")
	}
	want, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "read_text_file", Arguments: good})
	if err != nil || want.IsError || !strings.Contains(fmt.Sprint(want.Content[0]), "première ligne") {
		t.Fatalf("the filesystem server's own answer: %+v %v", want, err)
	}
	wantJSON, _ := json.Marshal(want)
	own, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "read_text_file", Arguments: bad[0].args})
	if err == nil && len(own.Content) > 0 {
		t.Logf("(%s) the filesystem server itself answers %s with isError %v: %.300s", era, bad[0].args, own.IsError, own.Content[0].(*sdk.TextContent).Text)
	}

	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := untilHung(t)
			defer cancel()
			// The server's stdin is copied to wire: what the hub sent it.
			wire := filepath.Join(t.TempDir(), "wire.jsonl")
			cfg := writeConfig(t, fmt.Sprintf(`
mode: %s
settings: { stop_grace: 1s, `+nodeWaits+` }
groups:
  files:
    description: Files
    command: sh
    args: %s
`, mode, yamlList(append([]string{"-c", `tee -a "$0" | exec "$@"`, wire}, server...))))
			cs := connectGoSDKCommand(ctx, t, []string{hubBin, "serve", "-c", cfg, "--standalone"}, []string{"DYNAMIC_MCP_HOME=" + t.TempDir()}, era)
			call := func(args json.RawMessage) (*sdk.CallToolResult, error) {
				if mode == "flat" {
					return cs.CallTool(ctx, &sdk.CallToolParams{Name: "files__read_text_file", Arguments: args})
				}
				return cs.CallTool(ctx, &sdk.CallToolParams{Name: "call_dynamic_tool",
					Arguments: json.RawMessage(`{"group":"files","name":"read_text_file","args":` + string(args) + `}`)})
			}

			// The valid call first: flat mode waits for the server.
			got, err := call(good)
			if err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			assertSameJSON(t, "the answer through the hub", gotJSON, wantJSON)

			for _, b := range bad {
				res, err := call(b.args)
				if err != nil {
					t.Fatalf("%s: %v", b.args, err)
				}
				text := ""
				if len(res.Content) == 1 {
					if tc, ok := res.Content[0].(*sdk.TextContent); ok {
						text = tc.Text
					}
				}
				heading, rest, _ := strings.Cut(text, "\n")
				problems, carried, found := strings.Cut(rest, "\nThe tool's input schema:\n")
				if !res.IsError || !strings.HasPrefix(heading, "Invalid arguments for tool ") || problems != b.want || !found {
					t.Errorf("%s: want an isError answer with %q and the schema, got isError %v: %s", b.args, b.want, res.IsError, text)
					continue
				}
				assertSameJSON(t, "the schema the answer carries", []byte(carried), schema)
				t.Logf("%s: %.200s", b.args, text)
			}

			// What reached the server: the valid call's arguments as the
			// client wrote them, and no other call.
			sent, _ := os.ReadFile(wire)
			var calls []string
			for _, line := range strings.Split(string(sent), "\n") {
				if strings.Contains(line, `"tools/call"`) {
					calls = append(calls, line)
				}
			}
			if len(calls) != 1 || !strings.Contains(calls[0], `"arguments":`+string(good)) {
				t.Errorf("the server got %d calls, want the valid one with its arguments %s as sent:\n%s", len(calls), good, strings.Join(calls, "\n"))
			}
		})
	}
}

// connectGoSDKCommand connects go-sdk's client to the server argv starts
// (with env beside the test's) in the era version (its default if ""),
// closed when the test ends.
func connectGoSDKCommand(ctx context.Context, t *testing.T, argv, env []string, version string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	c := sdk.NewClient(&sdk.Implementation{Name: "validateargs-go-sdk", Version: "1"}, nil)
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
