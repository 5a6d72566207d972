package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server"
)

// promptPolicy is a group's policy that asks the user about echo and
// prompt-1.
const promptPolicy = `    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a yes" }
      - { name: ask-prompt, action: prompt, prompt: "prompt-1" }
`

// bearer adds a token to every request, on testClient's transport.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return testClient.Transport.RoundTrip(r)
}

// elicitor is a go-sdk client's elicitation handler that answers each
// question with the next of its answers and keeps the questions.
type elicitor struct {
	mu      sync.Mutex
	answers []string
	asked   []string
}

func (e *elicitor) handle(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	a := e.answers[0]
	e.answers = e.answers[1:]
	return &sdk.ElicitResult{Action: a}, nil
}

func (e *elicitor) questions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...)
}

// The acceptance test of issue 24's input_required prompt: go-sdk's client
// (v1.8.0), speaking 2026-07-28, over stdio and over Streamable HTTP
// (where it has no session), in flat and dynamic mode. A prompt rule's
// call completes through its input_required round when the user accepts,
// and is refused -32001 when the user declines; the client's own
// elicitation handler is what answers, as for a server's elicitation.
func TestGoSDKClientPromptRuleRound(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"flat", "dynamic"} {
		yaml := flatFakeYAML(t.TempDir(), "call_timeout: 5s", promptPolicy)
		if mode == "dynamic" {
			// runHub waits for f__echo in tools/list: exposed beside the
			// meta-tools, it is listed, and call_dynamic_tool calls it too.
			yaml = strings.Replace(yaml, "mode: flat", "mode: dynamic", 1) + "    expose: [echo]\n"
		}
		h, _ := runHub(t, yaml, nil)
		face := New(h, Options{Tokens: map[string]string{"a": tokenA}}, testLogger())
		ts := httptest.NewServer(face)
		t.Cleanup(func() { ts.Close(); face.Close() })
		for _, transport := range []string{"stdio", "streamable-http"} {
			t.Run(mode+"/"+transport, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				e := &elicitor{answers: []string{"accept", "decline", "accept"}}
				c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-prompt", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: e.handle})
				var tr sdk.Transport
				if transport == "stdio" {
					inR, inW := io.Pipe()
					outR, outW := io.Pipe()
					done := make(chan error, 1)
					go func() {
						done <- h.ServeStdioWith(context.Background(), inR, outW, server.StdioOptions{SessionID: "go-sdk"})
					}()
					t.Cleanup(func() {
						inW.Close()
						outR.Close()
						<-done
					})
					tr = &sdk.IOTransport{Reader: outR, Writer: inW}
				} else {
					tr = &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer(tokenA)}}
				}
				cs, err := c.Connect(ctx, tr, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
					t.Fatalf("the client speaks %s", v)
				}
				if transport == "streamable-http" && cs.ID() != "" {
					t.Errorf("a session over HTTP: %s", cs.ID())
				}
				echo := &sdk.CallToolParams{Name: "f__echo", Arguments: map[string]any{"text": "yes please"}}
				if mode == "dynamic" {
					echo = &sdk.CallToolParams{Name: "call_dynamic_tool", Arguments: map[string]any{"group": "f", "name": "echo", "args": map[string]any{"text": "yes please"}}}
				}
				res, err := cs.CallTool(ctx, echo)
				if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "yes please" {
					t.Fatalf("accepted call: %+v %v", res, err)
				}
				_, err = cs.CallTool(ctx, echo)
				var re *sdkjsonrpc.Error
				if !errors.As(err, &re) || re.Code != -32001 || re.Message != "echo needs a yes (the user chose decline)" {
					t.Errorf("declined call: %v", err)
				}
				got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "f__prompt-1", Arguments: map[string]string{"topic": "owls"}})
				if err != nil || len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.(*sdk.TextContent).Text, "prompt-1 about owls") {
					t.Errorf("accepted prompt: %+v %v", got, err)
				}
				q := e.questions()
				if len(q) != 3 || !strings.Contains(q[0], `dynamic-mcp: allow tools/call "echo" on f? echo needs a yes.`) || !strings.Contains(q[2], `prompts/get "prompt-1"`) {
					t.Errorf("the questions: %q", q)
				}
				// Other tools are not asked about.
				pid := &sdk.CallToolParams{Name: "f__pid"}
				if mode == "dynamic" {
					pid = &sdk.CallToolParams{Name: "call_dynamic_tool", Arguments: map[string]any{"group": "f", "name": "pid"}}
				}
				if res, err := cs.CallTool(ctx, pid); err != nil || res.IsError || len(e.questions()) != 3 {
					t.Errorf("pid: %+v %v", res, err)
				}
			})
		}
	}
}

// A 2026-07-28 request over HTTP without a session gets the question in
// its POST's answer, and its retry, another POST, is the call; the state
// is bound to the credential, so another client's token cannot use it.
func TestPromptRuleRoundOverHTTPWithoutSession(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", promptPolicy), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	token := tokenA
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "f__echo")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get(headerSessionID); id != "" {
			t.Errorf("a session was given: %s", id)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id, more string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"over http"}` + more + `,` + meta + `}}`
	}
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	body := post(call("1", ""))
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 {
		t.Fatalf("first: %v %s", err, body)
	}
	var key string
	for k := range first.Result.InputRequests {
		key = k
	}
	retry := call("2", `,"inputResponses":{"`+key+`":{"action":"accept"}},"requestState":"`+first.Result.RequestState+`"`)
	token = tokenB
	if body = post(retry); !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "issued to another") {
		t.Errorf("another credential's retry: %s", body)
	}
	token = tokenA
	if body = post(retry); !strings.Contains(body, `"text":"over http"`) || strings.Contains(body, "input_required") {
		t.Errorf("accepted: %s", body)
	}
	if body = post(retry); !strings.Contains(body, `"code":-32602`) {
		t.Errorf("the state again: %s", body)
	}
}
