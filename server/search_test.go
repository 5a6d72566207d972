package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// searchClient runs a hub for the groups (YAML under groups:) with
// settings, and a client over pipes that has initialized.
func searchClient(t *testing.T, settings, groups string) (*Hub, *toolClient) {
	t.Helper()
	return searchClientMode(t, "dynamic", settings, groups)
}

// searchClientMode is searchClient in mode.
func searchClientMode(t *testing.T, mode, settings, groups string) (*Hub, *toolClient) {
	t.Helper()
	return searchClientYAML(t, fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nmode: %s\nsettings: {%s}\ngroups:\n%s", t.TempDir(), mode, settings, groups))
}

// searchClientYAML is searchClient for a whole config.
func searchClientYAML(t *testing.T, yaml string) (*Hub, *toolClient) {
	t.Helper()
	h, _ := runHub(t, yaml, true)
	c := &toolClient{pipeClient: servePipes(t, h, StdioOptions{})}
	c.initialize()
	return h, c
}

// waitGroupsUp waits until every group of h's view is up: not merely
// done starting (a server whose start failed on a loaded machine is
// retried, and its tools, counted for search's "auto", come later).
func waitGroupsUp(t *testing.T, h *Hub) {
	t.Helper()
	await.For(t, 15*time.Second, "the groups", func() bool {
		v := h.snapshot().view
		if v.Starting {
			return false
		}
		for _, g := range v.Groups {
			if g.State != upstream.StateReady {
				return false
			}
		}
		return true
	})
}

// toolClient numbers its requests and reads their answers.
type toolClient struct {
	*pipeClient
	id int
}

// ask sends a request and returns its answer line.
func (c *toolClient) ask(method string, params any) string {
	c.t.Helper()
	c.id++
	p, _ := json.Marshal(params)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, p))
	return c.answer(fmt.Sprint(c.id))
}

// toolNames lists the names tools/list answers with.
func (c *toolClient) toolNames() []string {
	c.t.Helper()
	var m struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	line := c.ask("tools/list", map[string]any{})
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		c.t.Fatalf("tools/list: %v: %s", err, line)
	}
	var names []string
	for _, tool := range m.Result.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// callText calls a tool and returns the text of its result, and whether
// the result is an error.
func (c *toolClient) callText(name string, args any) (string, bool) {
	c.t.Helper()
	line := c.ask("tools/call", map[string]any{"name": name, "arguments": args})
	var m struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result.Content) == 0 {
		c.t.Fatalf("%s: no text result: %s", name, line)
	}
	return m.Result.Content[0].Text, m.Result.IsError
}

// found is one tool of a search_dynamic_tools answer.
type found struct {
	Group, Name string
	Raw         json.RawMessage
}

// search calls search_dynamic_tools and returns the tools it found.
func (c *toolClient) search(args map[string]any) []found {
	c.t.Helper()
	return c.foundIn(args, c.ask("tools/call", map[string]any{"name": views.SearchToolName, "arguments": args}))
}

// foundIn is the tools a search_dynamic_tools answer line lists, in an
// object that names the query.
func (c *toolClient) foundIn(args map[string]any, line string) []found {
	c.t.Helper()
	var answer struct {
		Query *string           `json:"query"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(c.metaObjectIn(views.SearchToolName, args, line), &answer); err != nil || answer.Tools == nil {
		c.t.Fatalf("search %v answered no object with tools (%v): %s", args, err, line)
	}
	if q, _ := args["query"].(string); answer.Query == nil || *answer.Query != q {
		c.t.Errorf("search %v: the answer's query is %v", args, answer.Query)
	}
	raws := answer.Tools
	out := make([]found, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			c.t.Fatal(err)
		}
		out[i].Raw = raw
	}
	return out
}

// gated is the YAML args of a fake upstream that answers initialize only
// once the file gate exists: until the test opens the gate (openGate),
// its group is starting, however fast or slow the machine.
func gated(gate string) string { return fmt.Sprintf(`"-gate", %q`, gate) }

func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func names(fs []found) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Group+"/"+f.Name)
	}
	return out
}

// fakeGroups are two fake upstreams: f hides crash by its deny-list, g
// (whose tools are named g_<tool>) shows only what its allow-list names
// and can grow a tool.
func fakeGroups() string {
	return fmt.Sprintf(`  f:
    description: A fake server for tests
    command: %q
    deny: ["^crash$"]
  g:
    description: Another fake that grows plants
    command: %q
    args: ["-name", "g", "-prefix", "-grow"]
    allow: ["^g_(echo|sleep|grow|sprout)$"]
`, fakeBin, fakeBin)
}

// Search ranks what get_dynamic_tools would list, hands each tool out in
// get_dynamic_tools' own bytes with its group, and never returns a tool a
// deny- or allow-list hides; the group and limit arguments narrow it.
func TestSearchDynamicTools(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h, c := searchClient(t, "search: on", fakeGroups())
	await.For(t, 15*time.Second, "both groups", func() bool {
		v := h.snapshot().view
		return len(v.GroupIndex["f"].Tools) > 0 && len(v.GroupIndex["g"].Tools) > 0
	})
	if got := c.toolNames(); !slices.Equal(got, []string{views.GetToolsName, views.CallToolName, views.SearchToolName}) {
		t.Fatalf("tools/list: %q", got)
	}

	got := c.search(map[string]any{"query": "wait a few milliseconds before answering"})
	if len(got) == 0 || len(got) > views.SearchLimit || got[0].Name != "sleep" && got[0].Name != "g_sleep" {
		t.Fatalf("search for sleeping: %q", names(got))
	}
	// The entry is get_dynamic_tools' entry with the group in front.
	var listed struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(c.metaObject(views.GetToolsName, map[string]any{"group": got[0].Group}), &listed); err != nil {
		t.Fatal(err)
	}
	want := `{"group":"` + got[0].Group + `",`
	for _, raw := range listed.Tools {
		if strings.Contains(string(raw), `"name":"`+got[0].Name+`"`) {
			want += string(raw[1:])
		}
	}
	if string(got[0].Raw) != want {
		t.Errorf("search entry\n  %s\nget_dynamic_tools entry with its group\n  %s", got[0].Raw, want)
	}

	// Hidden tools are never found, by any words of theirs.
	hidden := []string{"crash", "g_crash", "g_pid", "g_fail"}
	for _, q := range []string{"Exit with status 3 mid-call", "crash", "g_crash", "Answer with the process id", "pid", "Answer with a JSON-RPC error"} {
		for _, f := range c.search(map[string]any{"query": q, "limit": 20}) {
			if slices.Contains(hidden, f.Name) {
				t.Errorf("search %q found hidden tool %s/%s", q, f.Group, f.Name)
			}
		}
	}
	// ... while f's visible pid is found, so the searches above could fail.
	if got := c.search(map[string]any{"query": "process id"}); len(got) == 0 || got[0].Name != "pid" {
		t.Errorf("search for the process id: %q", names(got))
	}

	for _, tc := range []struct {
		name string
		args map[string]any
		want func([]found) bool
	}{
		{"group", map[string]any{"query": "echo text back", "group": "g"}, func(fs []found) bool {
			return len(fs) > 0 && fs[0].Name == "g_echo" && !slices.ContainsFunc(fs, func(f found) bool { return f.Group != "g" })
		}},
		{"limit", map[string]any{"query": "answer", "limit": 2}, func(fs []found) bool { return len(fs) == 2 }},
		{"limit over the most", map[string]any{"query": "text ms", "limit": 500}, func(fs []found) bool { return len(fs) == views.SearchLimitMax }},
		{"limit as a float", map[string]any{"query": "answer", "limit": 3.0}, func(fs []found) bool { return len(fs) == 3 }},
		// Models write numbers as strings; a limit out of range is cut to
		// it, 1e300 included (int(1e300) is no number Go defines).
		{"limit as a string", map[string]any{"query": "answer", "limit": " 3"}, func(fs []found) bool { return len(fs) == 3 }},
		{"limit null", map[string]any{"query": "answer", "limit": nil}, func(fs []found) bool { return len(fs) == views.SearchLimit }},
		{"limit below 1", map[string]any{"query": "answer", "limit": -1}, func(fs []found) bool { return len(fs) == views.SearchLimit }},
		{"limit 1e300", map[string]any{"query": "text ms", "limit": 1e300}, func(fs []found) bool { return len(fs) == views.SearchLimitMax }},
		{"limit 1e9 as a string", map[string]any{"query": "text ms", "limit": "1e9"}, func(fs []found) bool { return len(fs) == views.SearchLimitMax }},
		{"control characters and emoji", map[string]any{"query": "\x00\x1b[31m📁 echo \u202e👍🏽"}, func(fs []found) bool { return len(fs) > 0 && fs[0].Name == "echo" }},
		{"stop words only", map[string]any{"query": "what is it all about"}, func(fs []found) bool { return len(fs) == 0 }},
		{"exact name first", map[string]any{"query": "use big for this"}, func(fs []found) bool { return len(fs) > 0 && fs[0].Name == "big" }},
		{"flat name", map[string]any{"query": "f__state"}, func(fs []found) bool { return len(fs) > 0 && fs[0].Name == "state" }},
		{"nothing matches", map[string]any{"query": "zebra xylophone"}, func(fs []found) bool { return len(fs) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.search(tc.args); !tc.want(got) {
				t.Errorf("search %v: %q", tc.args, names(got))
			}
		})
	}
	// search_dynamic_tools' arguments are its own: a call_dynamic_tool
	// that carries them, of any type, is not refused for them.
	if text, isErr := c.callText(views.CallToolName, map[string]any{"group": "f", "name": "echo", "args": map[string]any{"text": "hi"}, "query": 5, "limit": "x"}); isErr || text != "hi" {
		t.Errorf("call_dynamic_tool with a stray query and limit: %q (error %v)", text, isErr)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "Missing required argument: query"},
		{map[string]any{"query": "  "}, "Missing required argument: query"},
		{map[string]any{"query": "echo", "group": "nope"}, "Unknown group: nope (groups: f, g)"},
		{map[string]any{"query": 5}, "query must be a string"},
		{map[string]any{"query": "echo", "limit": "lots"}, "limit must be a number"},
		{map[string]any{"query": "echo", "limit": true}, "limit must be a number"},
	} {
		if text, isErr := c.callText(views.SearchToolName, tc.args); !isErr || text != tc.want {
			t.Errorf("search %v: %q (error %v), want the error %q", tc.args, text, isErr, tc.want)
		}
	}
}

// A tool an upstream adds after it says its list changed is found by the
// next search: the index is built again with the view.
func TestSearchFindsToolAddedAfterListChanged(t *testing.T) {
	t.Parallel()
	h, c := searchClient(t, "search: on", fakeGroups())
	await.For(t, 15*time.Second, "group g", func() bool { return len(h.snapshot().view.GroupIndex["g"].Tools) > 0 })
	query := map[string]any{"query": "water my garden plants"}
	if got := c.search(query); slices.Contains(names(got), "g/g_sprout") {
		t.Fatalf("found sprout before it was grown: %q", names(got))
	}
	if text, isErr := c.callText(views.CallToolName, map[string]any{"group": "g", "name": "g_grow"}); isErr {
		t.Fatalf("grow: %s", text)
	}
	await.For(t, 15*time.Second, "the grown tool in the view", func() bool {
		_, ok := h.snapshot().view.GroupIndex["g"].ToolRoutes["g_sprout"]
		return ok
	})
	if got := c.search(query); len(got) == 0 || names(got)[0] != "g/g_sprout" {
		t.Fatalf("search after list_changed: %q", names(got))
	}
	if text, _ := c.callText(views.CallToolName, map[string]any{"group": "g", "name": "g_sprout", "args": map[string]any{"text": "roses"}}); text != "watered roses" {
		t.Errorf("calling what search found: %q", text)
	}
}

// search: off, and auto with few tools, leave the client the two original
// meta-tools, byte for byte; auto offers search once the ready groups hold
// more than config.SearchAutoTools tools, and the client hears the list
// changed when it appears.
func TestSearchSetting(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	three := func(extra string) string {
		var b strings.Builder
		for _, g := range []string{"a", "b", "c"} {
			fmt.Fprintf(&b, "  %s:\n    description: fake %s\n    command: %q\n    args: [%s]\n", g, g, fakeBin, extra)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, settings, groups string
		want                   []string
	}{
		{"off", "search: \"off\"", three(""), []string{views.GetToolsName, views.CallToolName}},
		{"auto with 20 tools", "search: auto", fmt.Sprintf("  a: {description: fake, command: %q}\n", fakeBin), []string{views.GetToolsName, views.CallToolName}},
		{"on with 20 tools", "search: on", fmt.Sprintf("  a: {description: fake, command: %q}\n", fakeBin), []string{views.GetToolsName, views.CallToolName, views.SearchToolName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c := searchClient(t, tc.settings, tc.groups)
			waitGroupsUp(t, h)
			if got := c.toolNames(); !slices.Equal(got, tc.want) {
				t.Errorf("tools: %q, want %q", got, tc.want)
			}
			if !slices.Contains(tc.want, views.SearchToolName) {
				searchNotOffered(t, c)
			}
		})
	}

	t.Run("flat", func(t *testing.T) {
		h, c := searchClientMode(t, "flat", "search: on", three(""))
		waitGroupsUp(t, h)
		if got := c.toolNames(); slices.Contains(got, views.SearchToolName) || len(got) < 50 {
			t.Errorf("flat tools/list: %d tools %q", len(got), got)
		}
		searchNotOffered(t, c)
	})

	t.Run("auto with 60 tools", func(t *testing.T) {
		// The upstreams answer initialize once the test opens the gate,
		// so the client lists the tools before they are ready, then
		// hears that the list changed.
		gate := filepath.Join(t.TempDir(), "gate")
		h, c := searchClient(t, "search: auto", three(gated(gate)))
		off := c.ask("tools/list", map[string]any{})
		if got := c.toolNames(); !slices.Equal(got, []string{views.GetToolsName, views.CallToolName}) || !h.snapshot().view.Starting {
			t.Fatalf("tools while the groups start: %q (starting: %v)", got, h.snapshot().view.Starting)
		}
		openGate(t, gate)
		c.readUntil(func(line string) bool { return strings.Contains(line, "notifications/tools/list_changed") })
		on := c.ask("tools/list", map[string]any{})
		if got := c.toolNames(); !slices.Equal(got, []string{views.GetToolsName, views.CallToolName, views.SearchToolName}) {
			t.Fatalf("tools after the groups are ready: %q", got)
		}
		// The two original tools are the same bytes either way (the
		// group list in their descriptions is the config's from the start).
		tools := func(line string) []json.RawMessage {
			var m struct {
				Result struct{ Tools []json.RawMessage } `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			return m.Result.Tools
		}
		before, after := tools(off), tools(on)
		for i := range 2 {
			if string(before[i]) != string(after[i]) {
				t.Errorf("tool %d changed when search came:\n%s\n%s", i, before[i], after[i])
			}
		}
		if got := c.search(map[string]any{"query": "echo text back", "group": "b"}); len(got) == 0 || got[0].Group != "b" || got[0].Name != "echo" {
			t.Errorf("search: %q", names(got))
		}
	})
}

// searchNotOffered checks that search_dynamic_tools, where the view does
// not offer it, is answered as any tool the client cannot see, whatever
// its arguments (before, arguments of the wrong type were refused as
// invalid first).
func searchNotOffered(t *testing.T, c *toolClient) {
	t.Helper()
	for _, args := range []map[string]any{{"query": "echo"}, {"query": 5, "limit": "x", "group": 7}} {
		if got := c.ask("tools/call", map[string]any{"name": views.SearchToolName, "arguments": args}); !strings.Contains(got, `"error":{"code":-32601,"message":"Tool not found: search_dynamic_tools"}`) {
			t.Errorf("search %v while not offered: %s", args, got)
		}
	}
}

// A search of every group asked while groups are starting waits for them
// (as a list does) instead of answering that nothing matches, and with
// search: auto a search asked before it is offered waits to see whether
// the groups bring enough tools for it, as flat mode waits for a tool not
// known yet.
func TestSearchWhileGroupsStart(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	gatedGroups := func(n int, gate string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "  %c:\n    description: fake\n    command: %q\n    args: [%s]\n", 'a'+i, fakeBin, gated(gate))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, settings string
		groups         int
	}{
		{"on", "search: on", 1},
		{"auto", "search: auto", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			// The search waits at most startup_wait for the groups, from
			// when the gate opens: far longer than a loaded machine takes
			// to start them, and a search that waits costs only the time
			// they take.
			h, c := searchClient(t, tc.settings+", startup_wait: 120s", gatedGroups(tc.groups, gate))
			// The search is asked while the groups are held at initialize;
			// once the hub is answering it, the gate opens. A search that
			// did not wait would be answered from the view of starting
			// groups, which holds no tools.
			args := map[string]any{"query": "echo text back"}
			c.id++
			id := fmt.Sprint(c.id)
			p, _ := json.Marshal(map[string]any{"name": views.SearchToolName, "arguments": args})
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, id, p))
			await.For(t, 10*time.Second, "the search to be in flight", func() bool {
				s := h.Sessions().Info()
				return len(s) == 1 && s[0].Inflight == 1
			})
			if !h.snapshot().view.Starting {
				t.Fatal("the groups are ready with the gate closed")
			}
			openGate(t, gate)
			if got := c.foundIn(args, c.answer(id)); len(got) == 0 || got[0].Name != "echo" {
				t.Errorf("search while the groups start: %q", names(got))
			}
		})
	}
}

// Searches while views are rebuilt over and over (a list_changed storm)
// each build the index of the view they read, at most once, and answer
// from it (run with -race).
func TestSearchDuringRefreshes(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	h, _ := searchClient(t, "search: on", fakeGroups())
	waitGroupsUp(t, h)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := h.snapshot().view
				if text := string(v.SearchDynamicTools(views.DynamicArgs{Query: json.RawMessage(`"echo text back"`)})); !strings.Contains(text, `\"name\":\"echo\"`) || !v.Search.Built() {
					t.Errorf("search: %s", text)
					return
				}
			}
		})
	}
	for range 50 {
		h.refresh()
	}
	close(stop)
	wg.Wait()
	h.refresh()
	if h.snapshot().view.Search.Built() {
		t.Error("a view's index was built before anyone searched it")
	}
}

// A group's expose: lists those tools beside the meta-tools, named as in
// flat mode, and a call to one is routed as in flat mode, policy
// included; a name the group does not have, or hides, is a warning.
func TestExposeTools(t *testing.T) {
	t.Parallel()
	groups := fmt.Sprintf(`  f:
    description: A fake server for tests
    command: %q
    deny: ["^crash$"]
    expose: [echo, nope, crash, echo]
    policy:
      - {name: no-secrets, action: deny, tool: echo, args: {text: "secret*"}, description: "no secrets"}
  g:
    description: Another fake
    command: %q
    args: ["-name", "g", "-prefix"]
    prefix: false
    expose: [g_pid]
  h:
    description: A fake whose tools are named as g's
    command: %q
    args: ["-name", "g", "-prefix"]
    prefix: false
    expose: [g_pid]
`, fakeBin, fakeBin, fakeBin)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h, c := searchClientYAML(t, fmt.Sprintf("state_dir: %q\naudit: {path: %q}\ngroups:\n%s", t.TempDir(), auditPath, groups))
	waitGroupsUp(t, h)
	if got := c.toolNames(); !slices.Equal(got, []string{views.GetToolsName, views.CallToolName, views.SearchToolName, "f__echo", "g_pid"}) {
		t.Fatalf("tools/list: %q", got)
	}
	line := c.ask("tools/list", map[string]any{})
	if !strings.Contains(line, `{"description":"Echo text back","inputSchema":{"properties":{"ms":{"type":"integer"},"text":{"type":"string"}},"type":"object"},"name":"f__echo"}`) {
		t.Errorf("f__echo is not echo's definition renamed: %s", line)
	}
	if text, isErr := c.callText("f__echo", map[string]any{"text": "through the hub"}); isErr || text != "through the hub" {
		t.Errorf("f__echo: %q", text)
	}
	if text, isErr := c.callText("g_pid", map[string]any{}); isErr || text == "" {
		t.Errorf("g_pid: %q", text)
	}
	if got := c.ask("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "secret plans"}}); !strings.Contains(got, `"code":-32001,"message":"no secrets"`) {
		t.Errorf("policy on an exposed tool: %s", got)
	}
	// ... and audited as in flat mode, under the upstream's own name (by
	// the trail's writer, a moment after the answer).
	var audit []byte
	await.For(t, 10*time.Second, "the audit records", func() bool {
		audit, _ = os.ReadFile(auditPath)
		return bytes.Count(audit, []byte("\n")) >= 3
	})
	for _, want := range []string{`"group":"f","server":"f","method":"tools/call","tool":"echo","decision":"allow"`, `"tool":"echo","decision":"deny","rule":"no-secrets"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("no audit record with %s in\n%s", want, audit)
		}
	}
	// What is not exposed is not callable by its flat name.
	if got := c.ask("tools/call", map[string]any{"name": "f__sleep", "arguments": map[string]any{}}); !strings.Contains(got, "Tool not found: f__sleep") {
		t.Errorf("f__sleep: %s", got)
	}
	// echo, named twice, is exposed once and is no collision; h's g_pid
	// is withheld, g's listed first.
	var problems []string // h's prompts and resources collide with g's too
	for _, p := range h.snapshot().view.Problems {
		if strings.Contains(p, "exposed") {
			problems = append(problems, p)
		}
	}
	if len(problems) != 1 || problems[0] != `tool "g_pid" of h is not exposed: its name collides with a tool of g (set prefix: true on the group)` {
		t.Errorf("problems: %q", problems)
	}
	warnings := strings.Join(h.snapshot().view.Warnings, "\n")
	for _, name := range []string{"nope", "crash"} {
		if !strings.Contains(warnings, fmt.Sprintf("group f exposes tool %q, which none of its servers lists (or the group hides it)", name)) {
			t.Errorf("no warning for %s in %q", name, warnings)
		}
	}
}
