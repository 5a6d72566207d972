package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// metaWithCaps is the _meta of a 2026-07-28 request from a client that
// declares caps.
func metaWithCaps(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// inputRequired is an input_required result as a client reads it.
type inputRequired struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// reply reads until the answer to id: an input_required result names
// methods, so answer (which skips lines that do) does not do.
func reply(c *pipeClient, id string) string {
	c.t.Helper()
	all := c.readUntil(func(line string) bool {
		return strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"result"`) || strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"error"`)
	})
	return all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
}

// answerOf decodes an answer line: its result, or fails on an error.
func answerOf(t *testing.T, line string) inputRequired {
	t.Helper()
	var m struct {
		Result *inputRequired   `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	mustJSON(t, line, &m)
	if m.Result == nil {
		t.Fatalf("not a result: %s", line)
	}
	return *m.Result
}

// refusal decodes an error answer: its code and message.
func refusal(t *testing.T, line string) (int, string) {
	t.Helper()
	var m struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	mustJSON(t, line, &m)
	if m.Error == nil {
		t.Fatalf("not an error: %s", line)
	}
	return m.Error.Code, m.Error.Message
}

// askCall is a 2026-07-28 tools/call of the fake's ask tool with id, the
// client declaring caps, and more params after the name.
func askCall(id, caps, more string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__ask","arguments":{}` + more + `,` + metaWithCaps(caps) + `}}`
}

// A 2026-07-28 client in front of an older server: the server's
// elicitation during the call reaches the client as the call's
// input_required answer, and the client's retry with its answer resumes
// the call, whose result is the server's; the state is good for that one
// retry only.
func TestInputRequiredHeldCall(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(askCall("1", `{"elicitation":{}}`, ""))
	first := answerOf(t, reply(c, "1"))
	ask, ok := first.InputRequests["input-1"]
	if first.ResultType != "input_required" || !ok || ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), "What is your name?") || first.RequestState == "" {
		t.Fatalf("first answer: %+v", first)
	}
	retry := `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + first.RequestState + `"`
	c.send(askCall("2", `{"elicitation":{}}`, retry))
	final := answerOf(t, reply(c, "2"))
	if final.ResultType != "complete" || len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, `"name":"Ada"`) {
		t.Fatalf("final answer: %+v", final)
	}
	// The round was answered: its state is spent.
	c.send(askCall("3", `{"elicitation":{}}`, retry))
	if code, msg := refusal(t, reply(c, "3")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateUsed.Error()) {
		t.Errorf("replayed state: %d %s", code, msg)
	}
}

// The progress of a call held across a 2026-07-28 client's rounds
// reaches the client in each round, as that round's: the server reports
// progress before it asks and after the answer, and the progress after
// the answer comes in the retry's round with the retry's token (it was
// lost: the call went upstream with the first round's token, which the
// hub forgot once that round was answered input_required; the everything
// server asks roots/list 350 ms after it starts, in the middle of a call
// on a connection dialled for it).
func TestInputRequiredHeldCallProgress(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	withToken := func(id, token, more string) string {
		return strings.Replace(askCall(id, `{"elicitation":{}}`, more), `"_meta":{`, `"_meta":{"progressToken":"`+token+`",`, 1)
	}
	c.send(withToken("1", "p1", ""))
	before := c.readUntil(func(line string) bool { return strings.HasPrefix(line, `{"jsonrpc":"2.0","id":1,`) })
	if !strings.Contains(before, `"progressToken":"p1"`) || !strings.Contains(before, `"progress":1`) {
		t.Errorf("the first round was sent no progress before its answer:\n%s", before)
	}
	first := answerOf(t, before[strings.LastIndex(before[:len(before)-1], "\n")+1:])
	if first.ResultType != "input_required" {
		t.Fatalf("first answer: %+v", first)
	}
	retry := `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + first.RequestState + `"`
	c.send(withToken("2", "p2", retry))
	after := c.readUntil(func(line string) bool { return strings.HasPrefix(line, `{"jsonrpc":"2.0","id":2,`) })
	if !strings.Contains(after, `"progressToken":"p2"`) || !strings.Contains(after, `"progress":2`) {
		t.Errorf("the retry's round was sent no progress of the call after the answer:\n%s", after)
	}
	if final := answerOf(t, after[strings.LastIndex(after[:len(after)-1], "\n")+1:]); final.ResultType != "complete" {
		t.Fatalf("final answer: %+v", final)
	}
}

// A sealed requestState altered, sent by another session, for another
// request or after it expired is refused -32602 with the reason, and the
// call it names is still there for the right retry.
func TestInputRequiredStateRefused(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	a := servePipes(t, h, StdioOptions{})
	a.send(askCall("1", `{"elicitation":{}}`, ""))
	state := answerOf(t, reply(a, "1")).RequestState
	answer := `"inputResponses":{"input-1":{"action":"accept","content":{"name":"Bo"}}}`
	with := func(s string) string { return `,` + answer + `,"requestState":"` + s + `"` }

	altered := []byte(state)
	altered[len(altered)/2] ^= 1
	if altered[len(altered)/2] == '-' || altered[len(altered)/2] == '_' {
		altered[len(altered)/2] = 'A'
	}
	a.send(askCall("2", `{"elicitation":{}}`, with(string(altered))))
	if code, msg := refusal(t, reply(a, "2")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateForged.Error()) {
		t.Errorf("altered state: %d %s", code, msg)
	}
	a.send(askCall("3", `{"elicitation":{}}`, with("not even base64!")))
	if code, msg := refusal(t, reply(a, "3")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateForged.Error()) {
		t.Errorf("made-up state: %d %s", code, msg)
	}
	a.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}` + with(state) + `,` + metaWithCaps(`{"elicitation":{}}`) + `}}`)
	if code, msg := refusal(t, reply(a, "4")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateCall.Error()) {
		t.Errorf("state of another request: %d %s", code, msg)
	}
	b, err := h.Open("other", "stdio", facePeerStub{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msg, err := jsonrpc.Decode([]byte(askCall("5", `{"elicitation":{}}`, with(state))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Request(t.Context(), msg)
	var re *rpcError
	if !errors.As(err, &re) || re.Code != codeInvalidParams || !strings.Contains(re.Message, rounds.ErrStateCaller.Error()) {
		t.Errorf("state of another session: %v", err)
	}
	// None of them used the round up: the right retry completes the call.
	a.send(askCall("6", `{"elicitation":{}}`, with(state)))
	if final := answerOf(t, reply(a, "6")); len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, "Bo") {
		t.Errorf("final answer: %+v", final)
	}
}

// A client that does not declare elicitation is not asked: the server's
// request is refused, as for a client that was asked directly, and the
// call completes with what the server makes of that.
func TestInputRequiredNotAskedWithoutCapability(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(askCall("1", `{}`, ""))
	final := answerOf(t, reply(c, "1"))
	if final.ResultType != "complete" || len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, "does not support elicitation/create") {
		t.Fatalf("answer: %+v", final)
	}
}

// An older client in front of a 2026-07-28 server: each input request
// reaches the client as the request it stands for, and the hub sends the
// call again with the answers and the server's requestState untouched
// until the server completes it.
func TestInputRequiredFulfilledForOlderClient(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-modern")
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	reply(c, "0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{}}}`)
	for _, want := range []string{"elicitation/create", "roots/list"} {
		all := c.readUntil(func(line string) bool { return strings.Contains(line, `"method":"`+want+`"`) })
		var req struct{ ID json.RawMessage }
		mustJSON(t, all[strings.LastIndex(all[:len(all)-1], "\n")+1:], &req)
		switch want {
		case "elicitation/create":
			c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"Cy"}}}`)
		default:
			c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"roots":[{"uri":"file:///r"}]}}`)
		}
	}
	final := answerOf(t, reply(c, `"ask"`))
	if len(final.Content) != 1 {
		t.Fatalf("final: %+v", final)
	}
	// The server's round-2 state carries its first answer as it got it.
	if got := final.Content[0].Text; !strings.Contains(got, `state: round 2 {"action":"accept","content":{"name":"Cy"}}`) || !strings.Contains(got, `file:///r`) {
		t.Errorf("final text: %s", got)
	}
}

// A 2026-07-28 client in front of a 2026-07-28 server: the server's
// input_required passes through, its requestState sealed inside the
// hub's, and each retry reaches the server with the server's own state.
func TestInputRequiredRelayed(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-modern")
	c := servePipes(t, h, StdioOptions{})
	caps := `{"elicitation":{},"roots":{}}`
	c.send(askCall("1", caps, ""))
	first := answerOf(t, reply(c, "1"))
	if _, ok := first.InputRequests["name"]; !ok || first.ResultType != "input_required" || first.RequestState == "" || strings.Contains(first.RequestState, "round") {
		t.Fatalf("first: %+v", first)
	}
	c.send(askCall("2", caps, `,"inputResponses":{"name":{"action":"accept","content":{"name":"Di"}}},"requestState":"`+first.RequestState+`"`))
	second := answerOf(t, reply(c, "2"))
	if _, ok := second.InputRequests["roots"]; !ok || second.RequestState == "" || second.RequestState == first.RequestState {
		t.Fatalf("second: %+v", second)
	}
	c.send(askCall("3", caps, `,"inputResponses":{"roots":{"roots":[]}},"requestState":"`+second.RequestState+`"`))
	final := answerOf(t, reply(c, "3"))
	if len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, `state: round 2 {"action":"accept","content":{"name":"Di"}}`) {
		t.Fatalf("final: %+v", final)
	}
	// The server's state, sent as it is, is not one the hub sealed.
	c.send(askCall("4", caps, `,"inputResponses":{"name":{"action":"accept","content":{}}},"requestState":"round 1 <&>"`))
	if code, _ := refusal(t, reply(c, "4")); code != codeInvalidParams {
		t.Errorf("an unsealed state: code %d", code)
	}
}

// In dynamic mode call_dynamic_tool takes part in rounds as a tool of the
// client's own would: the retry carries its answers and state beside the
// same group, name and args, and the upstream gets them.
func TestInputRequiredThroughCallDynamicTool(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"-modern"}} {
		t.Run(strings.Join(append([]string{"fake"}, args...), " "), func(t *testing.T) {
			yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    args: [\""+strings.Join(args, `","`)+"\"]\n"), "mode: flat", "mode: dynamic", 1)
			if args == nil {
				yaml = strings.Replace(yaml, "    args: [\"\"]\n", "", 1)
			}
			h, mgr := runHub(t, yaml, true)
			await.For(t, 10*time.Second, "the upstream", func() bool { return len(mgr.Servers()[0].Lists().Tools) > 0 })
			c := servePipes(t, h, StdioOptions{})
			caps := `{"elicitation":{},"roots":{}}`
			call := func(id, more string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"ask","args":{}}` + more + `,` + metaWithCaps(caps) + `}}`
			}
			c.send(call("1", ""))
			got := answerOf(t, reply(c, "1"))
			for id := 2; got.ResultType == "input_required" && id < 6; id++ {
				answers := map[string]json.RawMessage{}
				for k, in := range got.InputRequests {
					if in.Method == "roots/list" {
						answers[k] = json.RawMessage(`{"roots":[{"uri":"file:///d"}]}`)
					} else {
						answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Flo"}}`)
					}
				}
				b, _ := json.Marshal(answers)
				sid := strings.Repeat("1", id) // ids 11, 111, ...: distinct
				c.send(call(sid, `,"inputResponses":`+string(b)+`,"requestState":"`+got.RequestState+`"`))
				got = answerOf(t, reply(c, sid))
			}
			if len(got.Content) != 1 || !strings.Contains(got.Content[0].Text, "Flo") {
				t.Fatalf("final: %+v", got)
			}
		})
	}
}

// An older server over Streamable HTTP (mcp-go's, on 2025-11-25) asks
// during a call on the call's own response stream: a 2026-07-28 client
// gets that as its input_required round too, and its retry resumes the
// call.
func TestInputRequiredHeldCallOverHTTPUpstream(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("remote", "1", mcpserver.WithElicitation())
	srv.AddTool(mcp.NewTool("ask"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s %v", res.Action, res.Content)), nil
	})
	h := remoteAskHub(t, srv, "5s")

	c := servePipes(t, h, StdioOptions{})
	c.send(askCall("1", `{"elicitation":{}}`, ""))
	first := answerOf(t, reply(c, "1"))
	if first.ResultType != "input_required" || len(first.InputRequests) != 1 {
		t.Fatalf("first: %+v", first)
	}
	c.send(askCall("2", `{"elicitation":{}}`, `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Gus"}}},"requestState":"`+first.RequestState+`"`))
	if final := answerOf(t, reply(c, "2")); len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, "accept map[name:Gus]") {
		t.Fatalf("final: %+v", final)
	}
}

// A 2026-07-28 client's own capabilities reach a 2026-07-28 server in its
// request's _meta, in place of those the hub declared, so that the server
// asks it only what it can answer.
func TestModernUpstreamGetsTheClientsCapabilities(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-modern")
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},` + metaWithCaps(`{"sampling":{"tools":{}}}`) + `}}`)
	reply(c, "1")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__state","arguments":{}}}`)
	got := answerOf(t, reply(c, "2"))
	if len(got.Content) != 1 || !strings.Contains(got.Content[0].Text, `"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{\"tools\":{}}}`) {
		t.Errorf("the server's state: %+v", got)
	}
}

// Two calls of one client to one Streamable HTTP server, both held: the
// server's question during the first, asked once the second is running
// too, is put to the first call's round (the part of the hop it came
// during), not to the latest call.
func TestInputRequiredHeldCallsTellApart(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv := mcpserver.NewMCPServer("remote", "1", mcpserver.WithElicitation())
	srv.AddTool(mcp.NewTool("ask"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who, _ := req.GetArguments()["who"].(string)
		if who == "first" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "Name for " + who + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s %s %v", who, res.Action, res.Content)), nil
	})
	h := remoteAskHub(t, srv, "20s")

	c := servePipes(t, h, StdioOptions{})
	call := func(id, who, more string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__ask","arguments":{"who":"` + who + `"}` + more + `,` + metaWithCaps(`{"elicitation":{}}`) + `}}`
	}
	c.send(call("1", "first", ""))
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first call never reached the server")
	}
	c.send(call("2", "second", ""))
	second := answerOf(t, reply(c, "2"))
	if ask := second.InputRequests["input-1"]; second.ResultType != "input_required" || !strings.Contains(string(ask.Params), "Name for second?") {
		t.Fatalf("the second call's round: %+v", second)
	}
	close(release) // the first call asks now, the second call the latest
	first := answerOf(t, reply(c, "1"))
	if ask := first.InputRequests["input-1"]; first.ResultType != "input_required" || !strings.Contains(string(ask.Params), "Name for first?") {
		t.Fatalf("the first call's round: %+v", first)
	}
	answer := func(id, who, state string) string {
		return call(id, who, `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+state+`"`)
	}
	for i, p := range []struct{ who, state string }{{"first", first.RequestState}, {"second", second.RequestState}} {
		id := strconv.Itoa(3 + i)
		c.send(answer(id, p.who, p.state))
		if final := answerOf(t, reply(c, id)); len(final.Content) != 1 || !strings.Contains(final.Content[0].Text, p.who+" accept map[name:Ada]") {
			t.Fatalf("the %s call's result: %+v", p.who, final)
		}
	}
}

// remoteAskHub is a hub in flat mode before srv, served over Streamable
// HTTP as group f, whose ask tool it lists, with the call timeout given.
func remoteAskHub(t *testing.T, srv *mcpserver.MCPServer, callTimeout string) *Hub {
	t.Helper()
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	cfg, err := config.Parse("test.yaml", strings.NewReader(fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {call_timeout: %s}\ngroups:\n  f:\n    description: remote\n    url: %q\n",
		t.TempDir(), callTimeout, ts.URL+"/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, testLogger())
	mgr.SetClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}})
	h, err := New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close() })
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__ask"]; return ok })
	return h
}
