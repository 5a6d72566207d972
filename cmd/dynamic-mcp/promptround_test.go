package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 24: go-sdk's client speaking 2026-07-28, which the hub sends no
// requests, is asked about a prompt rule's call in the call's
// input_required round: the call completes when its elicitation handler
// accepts and is refused -32001 when it declines. Over stdio (the hub
// started by the client) and over Streamable HTTP (no session).
func TestGoSDKClientAnswersPromptRuleRound(t *testing.T) {
	t.Parallel()
	cfg := fmt.Sprintf(`mode: flat
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a yes" }
`, fakeBin)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startHTTPHub(t, cfg)
	for _, transport := range []string{"stdio", "streamable-http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var mu sync.Mutex
			answers, asked := []string{"accept", "decline"}, []string{}
			c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-prompt", Version: "1"}, &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					a := answers[0]
					answers = answers[1:]
					return &sdk.ElicitResult{Action: a}, nil
				},
			})
			var tr sdk.Transport
			if transport == "stdio" {
				cmd := exec.Command(hubBin, "serve", "-c", cfgPath, "--standalone")
				cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
				tr = &sdk.CommandTransport{Command: cmd}
			} else {
				tr = &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{"Authorization": "Bearer " + testToken}}}
			}
			cs, err := c.Connect(ctx, tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("the client speaks %s", v)
			}
			echo := &sdk.CallToolParams{Name: "f__echo", Arguments: map[string]any{"text": "approved"}}
			var res *sdk.CallToolResult
			// Over stdio the hub's upstream may still be starting: flat mode
			// waits for it (startup_wait), so the first call is the test.
			res, err = cs.CallTool(ctx, echo)
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "approved" {
				t.Fatalf("accepted call: %+v %v", res, err)
			}
			_, err = cs.CallTool(ctx, echo)
			var re *sdkjsonrpc.Error
			if !errors.As(err, &re) || re.Code != -32001 || re.Message != "echo needs a yes (the user chose decline)" {
				t.Errorf("declined call: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 2 || !strings.HasPrefix(asked[0], `dynamic-mcp: allow tools/call "echo" on f? echo needs a yes.`) {
				t.Errorf("the questions: %q", asked)
			}
		})
	}
}
