package server

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// promptRuleHub runs a hub in mode (flat or dynamic) in front of one fake
// upstream "f" (started with args), whose policy asks the user about echo,
// ask, prompt p1 and the resource res/1.
func promptRuleHub(t *testing.T, mode string, args ...string) *Hub {
	t.Helper()
	group := `    policy:
      - { name: ask-echo, action: prompt, tool: echo, description: "echo needs a yes" }
      - { name: ask-ask, action: prompt, tool: ask }
      - { name: ask-prompt, action: prompt, prompt: "prompt-1" }
      - { name: ask-read, action: prompt, uri: "fake://*/res/1" }
`
	if len(args) > 0 {
		b, _ := json.Marshal(args)
		group += "    args: " + string(b) + "\n"
	}
	yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", group), "mode: flat", "mode: "+mode, 1)
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.PromptRoutes["f__prompt-1"]; return ok })
	return h
}

// echoCall is a 2026-07-28 call of f__echo with text, from a client that
// declares caps, with more params after the arguments.
func echoCall(id, text, caps, more string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"` + text + `"}` + more + `,` + metaWithCaps(caps) + `}}`
}

// retryWith are the params a retry adds: the answer to the hub's prompt
// under key and the state.
func retryWith(key, action, state string) string {
	return `,"inputResponses":{"` + key + `":{"action":"` + action + `"}},"requestState":"` + state + `"`
}

// promptKey is the key of the hub's one input request in first, checked
// to be the policy question as the client should show it.
func promptKey(t *testing.T, first inputRequired, what string) string {
	t.Helper()
	if first.ResultType != "input_required" || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("first answer: %+v", first)
	}
	for k, in := range first.InputRequests {
		var p struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}
		if err := json.Unmarshal(in.Params, &p); err != nil {
			t.Fatal(err)
		}
		if in.Method != "elicitation/create" || p.Mode != "" && p.Mode != "form" || !strings.Contains(p.Message, "dynamic-mcp: allow "+what) ||
			string(p.RequestedSchema) != `{"properties":{},"type":"object"}` {
			t.Fatalf("input request %s: %s %s", k, in.Method, in.Params)
		}
		return k
	}
	return ""
}

// A 2026-07-28 client's call that a prompt rule stops is answered
// input_required, the hub's question its one input request; the retry
// that accepts goes upstream as a first call would (without the hub's
// state or the answer) and is answered with the upstream's result; its
// state is good for that retry only. A decline is blocked -32001 with the
// reason, as for a client that was asked directly.
func TestPromptRuleThroughInputRequired(t *testing.T) {
	t.Parallel()
	h := promptRuleHub(t, "flat")
	c := servePipes(t, h, StdioOptions{})
	caps := `{"elicitation":{}}`
	c.send(echoCall("1", "hello", caps, ""))
	first := answerOf(t, reply(c, "1"))
	key := promptKey(t, first, `tools/call "echo" on f`)
	if msg := string(first.InputRequests[key].Params); !strings.Contains(msg, "echo needs a yes") || !strings.Contains(msg, `Arguments: {\"text\":\"hello\"}`) {
		t.Errorf("the question: %s", msg)
	}
	retry := retryWith(key, "accept", first.RequestState)
	c.send(echoCall("2", "hello", caps, retry))
	if final := answerOf(t, reply(c, "2")); final.ResultType == "input_required" || len(final.Content) != 1 || final.Content[0].Text != "hello" {
		t.Fatalf("accepted: %+v", final)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__state","arguments":{},` + metaWithCaps(caps) + `}}`)
	if got := answerOf(t, reply(c, "3")); len(got.Content) != 1 || strings.Contains(got.Content[0].Text, "requestState") ||
		strings.Contains(got.Content[0].Text, "inputResponses") || !strings.Contains(got.Content[0].Text, "hello") {
		t.Errorf("what the upstream got: %+v", got)
	}
	// The state let one retry through: it is spent.
	c.send(echoCall("4", "hello", caps, retry))
	if code, msg := refusal(t, reply(c, "4")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateUsed.Error()) {
		t.Errorf("replayed state: %d %s", code, msg)
	}
	for _, action := range []string{"decline", "cancel"} {
		c.send(echoCall("5", "no", caps, ""))
		first := answerOf(t, reply(c, "5"))
		c.send(echoCall("6", "no", caps, retryWith(promptKey(t, first, `tools/call "echo"`), action, first.RequestState)))
		if code, msg := refusal(t, reply(c, "6")); code != codePolicyBlocked || !strings.Contains(msg, "echo needs a yes (the user chose "+action+")") {
			t.Errorf("%s: %d %s", action, code, msg)
		}
	}
	// Other tools are not asked about.
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__pid","arguments":{},` + metaWithCaps(caps) + `}}`)
	if got := answerOf(t, reply(c, "7")); got.ResultType == "input_required" || len(got.Content) != 1 {
		t.Errorf("pid: %+v", got)
	}
}

// A 2026-07-28 client that does not declare elicitation in form mode is
// not asked: the call waits in the approval inbox, as an older client's
// (approvals_test.go), here denied there.
func TestPromptRuleWithoutElicitation(t *testing.T) {
	t.Parallel()
	h := promptRuleHub(t, "flat")
	c := servePipes(t, h, StdioOptions{})
	for i, caps := range []string{`{}`, `{"elicitation":{"url":{}}}`} {
		id := string(rune('1' + i))
		c.send(echoCall(id, "x", caps, ""))
		p := pendingOne(t, h)
		if err := h.Inbox().Deny(p.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if code, msg := refusal(t, reply(c, id)); code != codePolicyBlocked || !strings.Contains(msg, "denied by test") {
			t.Errorf("caps %s: %d %s", caps, code, msg)
		}
	}
}

// The rule is asked once per call: after the accepted retry the call goes
// on through the upstream's own rounds (an older upstream's elicitation
// the hub holds, or a 2026-07-28 upstream's input_required relayed), whose
// retries are not asked about again.
func TestPromptRuleThenUpstreamRounds(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"-modern"}} {
		t.Run(strings.Join(append([]string{"fake"}, args...), " "), func(t *testing.T) {
			h := promptRuleHub(t, "flat", args...)
			c := servePipes(t, h, StdioOptions{})
			caps := `{"elicitation":{},"roots":{}}`
			c.send(askCall("1", caps, ""))
			first := answerOf(t, reply(c, "1"))
			key := promptKey(t, first, `tools/call "ask" on f`)
			c.send(askCall("2", caps, retryWith(key, "accept", first.RequestState)))
			got := answerOf(t, reply(c, "2"))
			rounds := 0
			for id := 3; got.ResultType == "input_required" && id < 8; id++ {
				rounds++
				answers := map[string]json.RawMessage{}
				for k, in := range got.InputRequests {
					if k == key {
						t.Fatalf("asked again: %+v", got)
					}
					if in.Method == "roots/list" {
						answers[k] = json.RawMessage(`{"roots":[{"uri":"file:///d"}]}`)
					} else {
						answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Hal"}}`)
					}
				}
				b, _ := json.Marshal(answers)
				sid := strings.Repeat("3", id-2)
				c.send(askCall(sid, caps, `,"inputResponses":`+string(b)+`,"requestState":"`+got.RequestState+`"`))
				got = answerOf(t, reply(c, sid))
			}
			if rounds == 0 || len(got.Content) != 1 || !strings.Contains(got.Content[0].Text, "Hal") {
				t.Fatalf("after %d rounds of the upstream: %+v", rounds, got)
			}
		})
	}
}

// A state the hub did not seal, altered, expired, of another session or
// of another call is refused -32602 with the reason, as the upstream
// rounds' states are, and does not use up the question: the right retry
// still goes through. A retry that leaves the question unanswered is
// asked it again.
func TestPromptRuleStateRefused(t *testing.T) {
	t.Parallel()
	h := promptRuleHub(t, "flat")
	a := servePipes(t, h, StdioOptions{})
	caps := `{"elicitation":{}}`
	a.send(echoCall("1", "mine", caps, ""))
	first := answerOf(t, reply(a, "1"))
	key := promptKey(t, first, `tools/call "echo"`)
	state := first.RequestState

	altered := []byte(state)
	altered[len(altered)/2] ^= 1
	if altered[len(altered)/2] == '-' || altered[len(altered)/2] == '_' {
		altered[len(altered)/2] = 'A'
	}
	for i, tc := range []struct {
		msg  string
		want error
	}{
		{echoCall("2", "mine", caps, retryWith(key, "accept", string(altered))), rounds.ErrStateForged},
		{echoCall("3", "mine", caps, retryWith(key, "accept", "made up")), rounds.ErrStateForged},
		{echoCall("4", "other text", caps, retryWith(key, "accept", state)), rounds.ErrStateCall},
	} {
		id := string(rune('2' + i))
		a.send(tc.msg)
		if code, msg := refusal(t, reply(a, id)); code != codeInvalidParams || !strings.Contains(msg, tc.want.Error()) {
			t.Errorf("retry %s: %d %s", id, code, msg)
		}
	}
	a.send(echoCall("5", "mine", caps, `,"requestState":7`))
	if code, _ := refusal(t, reply(a, "5")); code != codeInvalidParams {
		t.Errorf("a state that is no string: %d", code)
	}
	a.send(echoCall("51", "mine", caps, `,"inputResponses":{"`+key+`":"yes"},"requestState":"`+state+`"`))
	if code, msg := refusal(t, reply(a, "51")); code != codeInvalidParams || !strings.Contains(msg, "must be an object") {
		t.Errorf("an answer that is no object: %d %s", code, msg)
	}
	b, err := h.Open("other", "stdio", facePeerStub{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msg, err := jsonrpc.Decode([]byte(echoCall("6", "mine", caps, retryWith(key, "accept", state))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Request(t.Context(), msg)
	var re *rpcError
	if !errors.As(err, &re) || re.Code != codeInvalidParams || !strings.Contains(re.Message, rounds.ErrStateCaller.Error()) {
		t.Errorf("state of another session: %v", err)
	}
	// An answer to nothing the hub asked: the question again, a new state.
	a.send(echoCall("7", "mine", caps, retryWith("something-else", "accept", state)))
	again := answerOf(t, reply(a, "7"))
	if promptKey(t, again, `tools/call "echo"`); again.RequestState == state {
		t.Fatalf("asked again with the same state: %+v", again)
	}
	a.send(echoCall("8", "mine", caps, retryWith(key, "accept", state)))
	if code, msg := refusal(t, reply(a, "8")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateUsed.Error()) {
		t.Errorf("the state of a question asked again: %d %s", code, msg)
	}
	a.send(echoCall("9", "mine", caps, retryWith(key, "accept", again.RequestState)))
	if got := answerOf(t, reply(a, "9")); len(got.Content) != 1 || got.Content[0].Text != "mine" {
		t.Errorf("accepted: %+v", got)
	}
	// A state past settings.prompt_timeout (2m by default) is refused.
	a.send(echoCall("10", "late", caps, ""))
	late := answerOf(t, reply(a, "10"))
	h.rounds.SetClock(func() time.Time { return time.Now().Add(config.DefaultPromptTimeout + time.Second) })
	a.send(echoCall("11", "late", caps, retryWith(key, "accept", late.RequestState)))
	if code, msg := refusal(t, reply(a, "11")); code != codeInvalidParams || !strings.Contains(msg, rounds.ErrStateExpired.Error()) {
		t.Errorf("expired: %d %s", code, msg)
	}
}

// In dynamic mode call_dynamic_tool is asked about as the tool it calls,
// and so are prompts/get and resources/read that a prompt rule names, in
// either mode.
func TestPromptRuleRoundInEveryMethod(t *testing.T) {
	t.Parallel()
	caps := `{"elicitation":{"form":{}}}`
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			h := promptRuleHub(t, mode)
			c := servePipes(t, h, StdioOptions{})
			for _, tc := range []struct {
				name, method, params, what, want string
			}{
				{"tool", "tools/call", `"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"dyn"}}`, `tools/call "echo" on f`, `"text":"dyn"`},
				{"prompt", "prompts/get", `"name":"f__prompt-1","arguments":{"topic":"cats"}`, `prompts/get "prompt-1" on f`, "prompt-1 about cats"},
				{"resource", "resources/read", `"uri":"fake://fake/res/1"`, `resources/read "fake://fake/res/1" on f`, "content of fake://fake/res/1"},
			} {
				if tc.name == "tool" && mode == "flat" {
					tc.params = `"name":"f__echo","arguments":{"text":"dyn"}`
				}
				send := func(id, more string) string {
					c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + tc.method + `","params":{` + tc.params + more + `,` + metaWithCaps(caps) + `}}`)
					return reply(c, id)
				}
				first := answerOf(t, send("1", ""))
				key := promptKey(t, first, tc.what)
				if line := send("2", retryWith(key, "accept", first.RequestState)); !strings.Contains(line, tc.want) || strings.Contains(line, "input_required") {
					t.Errorf("%s accepted: %s", tc.name, line)
				}
				first = answerOf(t, send("3", ""))
				if code, msg := refusal(t, send("4", retryWith(key, "decline", first.RequestState))); code != codePolicyBlocked || !strings.Contains(msg, "(the user chose decline)") {
					t.Errorf("%s declined: %d %s", tc.name, code, msg)
				}
			}
		})
	}
}
