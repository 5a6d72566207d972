package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// policyFixture is one file of testdata/policy/fixtures.
type policyFixture struct {
	file     string
	Method   string `json:"method"`
	Group    string `json:"group"`
	Expected string `json:"expected"`
	Params   struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// flatName is the name a flat-mode client calls the fixture's tool by.
func (f policyFixture) flatName() string {
	if f.Group == "" {
		return f.Params.Name
	}
	return f.Group + "__" + f.Params.Name
}

// fixtureHub runs the policy fixtures' config (testdata/policy) with the
// cooperative tools on, each group a fake upstream that offers the tools
// the fixtures name, and returns its fixtures.
func fixtureHub(t *testing.T, audit string) (*Hub, []policyFixture) {
	t.Helper()
	root := filepath.Join("..", "testdata", "policy")
	files, _ := filepath.Glob(filepath.Join(root, "fixtures", "*.json"))
	var fixtures []policyFixture
	tools := map[string][]string{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f := policyFixture{file: filepath.Base(file)}
		mustJSON(t, string(b), &f)
		fixtures = append(fixtures, f)
		if f.Method == "tools/call" {
			group, tool, _ := strings.Cut(f.flatName(), "__")
			tools[group] = append(tools[group], tool)
		}
	}
	if len(fixtures) < 10 {
		t.Fatalf("%d fixtures", len(fixtures))
	}
	cfg, err := os.ReadFile(filepath.Join(root, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(cfg)
	for group, cmd := range map[string]string{"files": "mcp-server-filesystem", "web": "mcp-server-browser"} {
		yaml = strings.Replace(yaml, "command: "+cmd+"\n", fmt.Sprintf("command: %q\n    args: [\"-name\", %q, \"-tools\", %q]\n", fakeBin, group, strings.Join(tools[group], ",")), 1)
	}
	yaml = fmt.Sprintf("state_dir: %q\naudit: {path: %q}\nsettings: {cooperative: on, prompt_timeout: 1s, call_timeout: 5s}\n", t.TempDir(), audit) + yaml
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstreams", func() bool {
		for _, s := range mgr.Servers() {
			if s.Status().State != upstream.StateReady {
				return false
			}
		}
		return true
	})
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["web__browser_navigate"]; return ok })
	return h, fixtures
}

// toolCall is a tools/call request.
func toolCall(id int, name string, args any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

// structured is the structuredContent of a tools/call answer.
func structured(t *testing.T, answer string) map[string]any {
	t.Helper()
	var msg struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	mustJSON(t, answer, &msg)
	if msg.Result.StructuredContent == nil {
		t.Fatalf("no structured answer: %s", answer)
	}
	return msg.Result.StructuredContent
}

// Over the policy fixtures, every call checkIntent says is allowed is let
// through when made for real through the hub, and every one it says is
// blocked (denied, hidden, or left to a person who does not answer) is
// refused; and its answer is the fixture's expected decision.
func TestCooperativeCheckIntentMatchesRealCalls(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h, fixtures := fixtureHub(t, "off")
	c := inboxClient(t, h) // no elicitation: a prompt waits in the inbox, unanswered
	id := 0
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			intent := map[string]any{"description": "fixture " + f.file, "action_type": "resource_access", "target": f.Params.URI}
			real := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, id+2, f.Params.URI)
			if f.Method == "tools/call" {
				intent = map[string]any{"description": "fixture " + f.file, "action_type": "other", "target": f.flatName(),
					"tool": f.flatName(), "arguments": f.Params.Arguments}
				real = toolCall(id+2, f.flatName(), f.Params.Arguments)
			}
			id += 2
			c.send(toolCall(id-1, "checkIntent", intent))
			a := structured(t, c.answer(fmt.Sprint(id-1)))
			c.send(real)
			got := c.answer(fmt.Sprint(id))
			ran := strings.Contains(got, `"result"`) && !strings.Contains(got, `"isError":true`)
			if allowed := a["allowed"] == true; allowed != ran {
				t.Errorf("checkIntent says allowed=%v, the real call: %s\ncheckIntent: %v", allowed, got, a)
			}
			want := map[string][]string{"allow": {"allow", "log"}, "deny": {"deny", "not_found"}, "prompt": {"prompt"}}[f.Expected]
			if !slices.Contains(want, fmt.Sprint(a["policy_rule"])) {
				t.Errorf("policy_rule %v, the fixture expects %s: %v", a["policy_rule"], f.Expected, a)
			}
			if f.Expected == "prompt" && (a["needs_approval"] != true || !strings.Contains(got, "-32001")) {
				t.Errorf("a prompt rule's call: checkIntent %v, real call %s", a, got)
			}
		})
	}
}

// coopYAML is a flat-mode hub with the cooperative tools on, in front of
// the fake upstream whose echo tool a prompt rule guards.
func coopHub(t *testing.T, audit, settings string) *Hub {
	return inboxHub(t, audit, "cooperative: on, prompt_timeout: 20s, "+settings, "")
}

// requestPermission puts the call to a person through the approval inbox,
// as a prompt rule's call is put for a client without elicitation; a yes
// leaves a grant of the session for exactly the arguments asked, which
// checkIntent then reports and the real call uses without asking; other
// arguments ask again; scope once covers one call.
func TestCooperativeRequestPermission(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h := coopHub(t, audit, "")
	c := inboxClient(t, h)
	ask := map[string]any{"resource": "echo", "operation": "execute", "justification": "to say hi", "tool": "f__echo", "arguments": map[string]any{"text": "hi"}}
	c.send(toolCall(1, "requestPermission", ask))
	p := pendingOne(t, h)
	if p.Tool != "echo" || !strings.Contains(p.Description, "The agent asks permission") || !strings.Contains(p.Description, "to say hi") {
		t.Errorf("pending: %+v", p)
	}
	if _, err := h.Inbox().Approve(p.ID, "alice", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	a := structured(t, c.answer("1"))
	if a["granted"] != true || a["scope"] != "session" || a["grant"] == "" || a["approved_by"] != "alice" || a["expires_at"] != nil {
		t.Errorf("granted: %v", a)
	}
	grants := h.Inbox().Approvals().Grants
	if len(grants) != 1 || grants[0].Session == "" || grants[0].Args["text"] != "hi" || grants[0].Tool != "echo" {
		t.Fatalf("grants: %+v", grants)
	}
	c.send(toolCall(2, "checkIntent", map[string]any{"description": "say hi", "action_type": "other", "target": "echo", "tool": "f__echo", "arguments": map[string]any{"text": "hi"}}))
	if a := structured(t, c.answer("2")); a["allowed"] != true || a["grant"] != grants[0].ID {
		t.Errorf("checkIntent with a grant: %v", a)
	}
	c.send(toolCall(3, "f__echo", map[string]any{"text": "hi"}))
	if got := c.answer("3"); !strings.Contains(got, `"text":"hi"`) {
		t.Errorf("the granted call: %s", got)
	}
	c.send(toolCall(4, "f__echo", map[string]any{"text": "other"}))
	p = pendingOne(t, h)
	if err := h.Inbox().Deny(p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("4"); !strings.Contains(got, "-32001") {
		t.Errorf("other arguments: %s", got)
	}
	// A no is an answer, not an error; scope once covers one call.
	ask["arguments"], ask["scope"] = map[string]any{"text": "once"}, "once"
	c.send(toolCall(5, "requestPermission", ask))
	if err := h.Inbox().Deny(pendingOne(t, h).ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if a := structured(t, c.answer("5")); a["granted"] != false || !strings.Contains(fmt.Sprint(a["explanation"]), "denied by bob") {
		t.Errorf("refused: %v", a)
	}
	c.send(toolCall(6, "requestPermission", ask))
	if _, err := h.Inbox().Approve(pendingOne(t, h).ID, "bob", approval.Options{}); err != nil {
		t.Fatal(err)
	}
	if a := structured(t, c.answer("6")); a["granted"] != true || a["scope"] != "once" {
		t.Errorf("once: %v", a)
	}
	c.send(toolCall(7, "f__echo", map[string]any{"text": "once"}))
	if got := c.answer("7"); !strings.Contains(got, `"text":"once"`) {
		t.Errorf("the call granted once: %s", got)
	}
	c.send(toolCall(8, "f__echo", map[string]any{"text": "once"}))
	if err := h.Inbox().Deny(pendingOne(t, h).ID, "bob"); err != nil {
		t.Fatal(err)
	}
	c.answer("8")
	// A call the policy allows needs no grant; the audit names the grant made.
	c.send(toolCall(9, "requestPermission", map[string]any{"resource": "x", "operation": "read", "justification": "j", "tool": "f__sleep"}))
	if a := structured(t, c.answer("9")); a["granted"] != true || a["scope"] != "policy" {
		t.Errorf("allowed by the policy: %v", a)
	}
	if rec := lastAudit(t, audit, 1); rec.Tool != "requestPermission" || rec.Decision != "cooperative" || rec.Grant != grants[0].ID || rec.ApprovedBy != "alice" {
		t.Errorf("audit of the permission: %+v", rec)
	}
}

// The tools are listed only where settings.cooperative or a profile turns
// them on, after the meta-tools in dynamic mode; elsewhere a call of one
// is a call of a tool that does not exist. An upstream tool under one of
// their names is hidden (and the view says so): the hub's answers.
func TestCooperativeListed(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	for _, tc := range []struct {
		name, mode, settings, profile string
		want                          []string
	}{
		{"flat", "flat", "cooperative: on", "", []string{"checkIntent", "requestPermission", "reportAction", "getPolicy", "f__echo"}},
		{"dynamic", "dynamic", "cooperative: on, search: off", "", []string{"get_dynamic_tools", "call_dynamic_tool", "checkIntent", "requestPermission", "reportAction", "getPolicy"}},
		{"off", "flat", "", "", nil},
		{"profile", "flat", "", "p", []string{"checkIntent", "requestPermission", "reportAction", "getPolicy", "f__echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := fmt.Sprintf("mode: %s\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\nprofiles:\n  p: {groups: [f, g], cooperative: on}\ngroups:\n  f:\n    description: fake\n    command: %q\n  g:\n    description: clash\n    prefix: false\n    command: %q\n    args: [\"-name\", \"g\", \"-prefix\", \"-tools\", \"checkIntent\"]\n",
				tc.mode, t.TempDir(), tc.settings, fakeBin, fakeBin)
			h, mgr := runHub(t, yaml, true)
			await.For(t, 10*time.Second, "the upstreams", func() bool {
				return mgr.Servers()[0].Status().State == upstream.StateReady && mgr.Servers()[1].Status().State == upstream.StateReady
			})
			await.For(t, 5*time.Second, "the view", func() bool {
				v := h.snapshot().viewOf(tc.profile)
				return len(v.GroupIndex["f"].Tools) > 0 && len(v.GroupIndex["g"].Tools) > 0
			})
			v := h.snapshot().viewOf(tc.profile)
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			mustJSON(t, string(v.ToolsList), &list)
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if tc.want == nil {
				if _, ok := v.FlatRoutes["checkIntent"]; !ok || v.cooperative || slices.Contains(names, "getPolicy") {
					t.Errorf("while off, checkIntent is the upstream's and the hub's tools are not listed: %v", names)
				}
				return
			}
			if !slices.Equal(names[:len(tc.want)-1], tc.want[:len(tc.want)-1]) || !slices.Contains(names, tc.want[len(tc.want)-1]) {
				t.Errorf("tools: %v", names)
			}
			if n := strings.Count(strings.Join(names, " "), "checkIntent"); n != 1 {
				t.Errorf("checkIntent listed %d times: %v", n, names)
			}
			if tc.mode == "flat" && !slices.ContainsFunc(v.Problems, func(p string) bool { return strings.Contains(p, `"checkIntent"`) }) {
				t.Errorf("the clash is not reported: %v", v.Problems)
			}
		})
	}
}

// Each tool keeps the seed's rate limit per caller: requestPermission's
// 11th call in a minute is answered -32000, another session's first is
// not; getPolicy has no limit.
func TestCooperativeRateLimits(t *testing.T) {
	t.Parallel()
	h := coopHub(t, "off", "")
	stopped := time.Now()
	h.rates.Now = func() time.Time { return stopped } // no token comes back while the test runs, however slow
	c, other := rateSession(t, h, "a", "", "{}"), rateSession(t, h, "b", "", "{}")
	ask := map[string]any{"resource": "x", "operation": "read", "justification": "j", "tool": "f__sleep"}
	for i := 1; i <= 10; i++ {
		c.send(toolCall(i, "requestPermission", ask))
		if got := c.answer(fmt.Sprint(i)); strings.Contains(got, `"error"`) {
			t.Fatalf("call %d: %s", i, got)
		}
	}
	c.send(toolCall(11, "requestPermission", ask))
	if got := c.answer("11"); !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, "10 calls a minute per caller") {
		t.Errorf("the 11th call: %s", got)
	}
	other.send(toolCall(1, "requestPermission", ask))
	if got := other.answer("1"); strings.Contains(got, `"error"`) {
		t.Errorf("another session: %s", got)
	}
	for i := 12; i <= 130; i++ {
		c.send(toolCall(i, "getPolicy", map[string]any{}))
		if got := c.answer(fmt.Sprint(i)); strings.Contains(got, `"error"`) {
			t.Fatalf("getPolicy call %d: %s", i, got)
		}
	}
}

// reportAction writes an audit record marked as the agent's report, with
// the event id it answers; getPolicy lists the rules a tool may meet.
func TestCooperativeReportAndPolicy(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h := coopHub(t, audit, "")
	c := inboxClient(t, h)
	c.send(toolCall(1, "reportAction", map[string]any{"description": "wrote a file", "action_type": "file_write", "target": "/tmp/x", "result": "success"}))
	a := structured(t, c.answer("1"))
	rec := lastAudit(t, audit, 1)
	if a["recorded"] != true || a["trusted"] != false || rec.Event != a["event_id"] || rec.Trust == "" || rec.Decision != "reported" ||
		rec.Report["description"] != "wrote a file" || rec.Report["result"] != "success" {
		t.Errorf("report %v, record %+v", a, rec)
	}
	c.send(toolCall(2, "getPolicy", map[string]any{"tool_name": "f__echo"}))
	p := structured(t, c.answer("2"))
	rules, _ := p["rules"].([]any)
	if len(rules) != 2 || rules[0].(map[string]any)["name"] != "writes" || p["default_action"] != "allow" {
		t.Errorf("getPolicy: %v", p)
	}
	c.send(toolCall(3, "checkIntent", map[string]any{"description": "d", "action_type": "other", "target": "t"}))
	if got := c.answer("3"); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "name the call you mean") {
		t.Errorf("checkIntent without a tool: %s", got)
	}
	c.send(toolCall(4, "checkIntent", map[string]any{"description": "d", "action_type": "other", "target": "t", "tool": "f__nothing"}))
	if a := structured(t, c.answer("4")); a["allowed"] != false || a["policy_rule"] != "not_found" {
		t.Errorf("checkIntent of a tool that does not exist: %v", a)
	}
}

// A client nobody here wrote, the go-sdk's, calls checkIntent and
// requestPermission through the hub; it answers the hub's question by
// form elicitation (the path a prompt rule's call takes for it), and the
// grant lets its call of the tool through.
func TestCooperativeGoSDKClient(t *testing.T) {
	t.Parallel()
	h := coopHub(t, "off", "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- h.ServeStdioWith(context.Background(), inR, outW, StdioOptions{}) }()
	t.Cleanup(func() { inW.Close(); outR.Close(); <-done })
	asked := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var out map[string]any
		mustJSON(t, res.Content[0].(*mcp.TextContent).Text, &out)
		return out
	}
	intent := map[string]any{"description": "say hi", "action_type": "other", "target": "echo", "tool": "f__echo", "arguments": map[string]any{"text": "hi"}}
	if a := call("checkIntent", intent); a["allowed"] != false || a["needs_approval"] != true {
		t.Errorf("before: %v", a)
	}
	a := call("requestPermission", map[string]any{"resource": "echo", "operation": "execute", "justification": "greeting", "tool": "f__echo", "arguments": map[string]any{"text": "hi"}})
	if msg := <-asked; !strings.Contains(msg, "greeting") || a["granted"] != true || a["approved_by"] != "client go-sdk-test" {
		t.Errorf("asked %q, answer %v", msg, a)
	}
	if a := call("checkIntent", intent); a["allowed"] != true {
		t.Errorf("after: %v", a)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "f__echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("the granted call: %v %+v", err, res)
	}
	select {
	case msg := <-asked:
		t.Errorf("asked again: %s", msg)
	default:
	}
}
