package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// inspectedHub runs a flat-mode hub in front of one fake upstream "f"
// (with the conformance suite's progress tool), whose policy denies echo
// of "x" by the rule no-x, with an inspector attached and its API served.
func inspectedHub(t testing.TB) (*Hub, *inspect.Inspector, *httptest.Server) {
	t.Helper()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    args: ["-conformance"]
    deny: ["^crash$"]
    policy:
      - {name: no-x, action: deny, tool: "echo", args: {text: "x"}, description: "no x, please"}
`), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	insp, api := attachInspector(t, h)
	return h, insp, api
}

// attachInspector makes an inspector watch h and serves its API.
func attachInspector(t testing.TB, h *Hub) (*inspect.Inspector, *httptest.Server) {
	insp := inspect.New(inspect.Options{Upstreams: h.mgr, ToolsList: h.ToolsListFor, Clients: func() []inspect.Client {
		var out []inspect.Client
		for _, s := range h.Sessions().Info() {
			out = append(out, inspect.Client{ID: s.ID, Transport: s.Transport, Name: s.ClientName, Inflight: s.Inflight})
		}
		return out
	}})
	h.Traffic().Observe(insp)
	api := httptest.NewServer(insp.API())
	t.Cleanup(func() { h.Traffic().Observe(nil); insp.Close(); api.Close() })
	return insp, api
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := testClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// inspectedRow is what the tests read of a row of the inspector's.
type inspectedRow struct {
	Kind, Session, Method, Group, Server, Target, Rule, Action, Status string
	Params, Result                                                     *struct{ Text string }
	Error                                                              *struct {
		Code    int
		Message string
	}
	Hops []struct {
		Server, Transport, Protocol, Method string
	}
	Messages []struct{ Direction, Method string }
}

// The inspector sees the hub's traffic joined: each request with its
// policy decision, its hop upstream, the progress that came during it and
// its answer, live on the stream and in the export, secrets redacted; and
// the hub's upstreams and sessions.
func TestInspectorSeesTheHubsTraffic(t *testing.T) {
	t.Parallel()
	h, _, api := inspectedHub(t)
	// A page watching from the start sees the rows live.
	resp, err := testClient.Get(api.URL + inspect.Prefix + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	live := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			live <- sc.Text()
		}
		close(live)
	}()

	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi","api_key":"sekrit"}}}`)
	c.answer(`"ok"`)
	c.send(`{"jsonrpc":"2.0","id":"no","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`)
	c.answer(`"no"`)
	c.send(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"f__test_tool_with_progress","_meta":{"progressToken":"tok"}}}`)
	c.answer(`"p"`)

	// Live: the blocked call's outcome comes with its rule.
	deadline := time.After(time.Minute) // bounds a hang, not a guess at the machine's speed
	for blocked := false; !blocked; {
		select {
		case line, ok := <-live:
			if !ok {
				t.Fatal("the stream ended")
			}
			blocked = strings.HasPrefix(line, "data: ") && strings.Contains(line, `"status":"blocked"`) && strings.Contains(line, `"rule":"no-x"`)
		case <-deadline:
			t.Fatal("the blocked call was not streamed")
		}
	}

	resp2, err := testClient.Get(api.URL + inspect.Prefix + "api/export")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if strings.Contains(string(export), "sekrit") || !strings.Contains(string(export), `\"api_key\":\"[redacted]\"`) {
		t.Errorf("the api_key was not redacted: %s", export)
	}
	rows := map[string]inspectedRow{}
	for line := range strings.Lines(string(export)) {
		var r inspectedRow
		mustJSON(t, line, &r)
		rows[r.Method+" "+r.Target+" "+r.Status] = r
	}
	if r, ok := rows["initialize  ok"]; !ok || r.Session != "stdio" || len(r.Hops) != 0 {
		t.Errorf("initialize: %+v (rows %v)", r, keys(rows))
	}
	ok := rows["tools/call echo ok"]
	if ok.Group != "f" || ok.Action != "allow" || len(ok.Hops) != 1 || ok.Hops[0].Server != "f" || ok.Hops[0].Transport != "stdio" ||
		ok.Hops[0].Protocol != "2025-11-25" || ok.Result == nil || !strings.Contains(ok.Result.Text, `"hi"`) {
		t.Errorf("allowed call: %+v", ok)
	}
	no := rows["tools/call echo blocked"]
	if no.Rule != "no-x" || no.Action != "deny" || len(no.Hops) != 0 || no.Error == nil || no.Error.Code != -32001 || no.Error.Message != "no x, please" {
		t.Errorf("blocked call: %+v", no)
	}
	p := rows["tools/call test_tool_with_progress ok"]
	var progress int
	for _, m := range p.Messages {
		if m.Method == "notifications/progress" && m.Direction == "from_upstream" {
			progress++
		}
	}
	if progress != 3 {
		t.Errorf("progress during the call: %+v", p.Messages)
	}

	var ups struct {
		Modes []struct {
			Mode  string
			Bytes int
		}
		Groups []struct {
			Name    string
			Servers []struct {
				ID, State, Protocol string
				Tools               int
				Hidden              int `json:"hidden_tools"`
				Since               *time.Time
			}
		}
	}
	getJSON(t, api.URL+inspect.Prefix+"api/upstreams", &ups)
	if len(ups.Modes) != 2 || ups.Modes[0].Bytes == 0 || ups.Modes[1].Bytes <= ups.Modes[0].Bytes {
		t.Errorf("modes: %+v", ups.Modes)
	}
	if len(ups.Groups) != 1 || len(ups.Groups[0].Servers) != 1 {
		t.Fatalf("upstreams: %+v", ups)
	}
	if s := ups.Groups[0].Servers[0]; s.ID != "f" || s.State != "ready" || s.Protocol != "2025-11-25" || s.Tools == 0 || s.Hidden != 1 || s.Since == nil {
		t.Errorf("server (crash denied, so one tool hidden and counted apart): %+v", s)
	}
	var clients []inspect.Client
	getJSON(t, api.URL+inspect.Prefix+"api/clients", &clients)
	if len(clients) != 1 || clients[0].ID != "stdio" || clients[0].Name == "" {
		t.Errorf("clients: %+v", clients)
	}
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkStdioToolCallInspected is BenchmarkStdioToolCall (the same
// hub and call) with the
// inspector attached and no page watching: what recording costs a call.
func BenchmarkStdioToolCallInspected(b *testing.B) {
	h := fakeHubB(b)
	attachInspector(b, h)
	benchToolCalls(b, h)
}

// BenchmarkStdioToolCallWatched is the same with a page watching the
// stream, reading every event.
func BenchmarkStdioToolCallWatched(b *testing.B) {
	h := fakeHubB(b)
	_, api := attachInspector(b, h)
	resp, err := testClient.Get(api.URL + inspect.Prefix + "api/events")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	go io.Copy(io.Discard, resp.Body)
	benchToolCalls(b, h)
}

// A request an upstream sends the client during a call (here an
// elicitation) is shown under that call, with the client's answer,
// redacted like every body.
func TestInspectorShowsUpstreamRequestsUnderTheirCall(t *testing.T) {
	t.Parallel()
	h, _, api := inspectedHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{}}}`)
	all := c.readUntil(func(line string) bool { return strings.Contains(line, `"method":"elicitation/create"`) })
	var req struct{ ID json.RawMessage }
	mustJSON(t, all[strings.LastIndex(all[:len(all)-1], "\n")+1:], &req)
	c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"Ada","password":"pw-123"}}}`)
	if got := c.answer(`"ask"`); !strings.Contains(got, "Ada") {
		t.Fatalf("ask: %s", got)
	}
	resp, err := testClient.Get(api.URL + inspect.Prefix + "api/export")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var found bool
	for line := range strings.Lines(string(export)) {
		var r struct {
			Method, Target string
			Messages       []struct {
				Direction, Method string
				Request           bool
				Result            *struct{ Text string }
			}
		}
		mustJSON(t, line, &r)
		if r.Target != "ask" {
			if strings.Contains(line, "elicitation/create") {
				t.Errorf("the elicitation is in a row of its own: %s", line)
			}
			continue
		}
		found = true
		if len(r.Messages) != 1 || r.Messages[0].Method != "elicitation/create" || !r.Messages[0].Request ||
			r.Messages[0].Direction != "from_upstream" || r.Messages[0].Result == nil ||
			!strings.Contains(r.Messages[0].Result.Text, `"password":"[redacted]"`) || strings.Contains(r.Messages[0].Result.Text, "pw-123") {
			t.Errorf("the ask's row: %s", line)
		}
	}
	if !found {
		t.Errorf("no row for the ask:\n%s", export)
	}
}

// get_dynamic_tools is answered by the hub itself, with no hop upstream:
// its row names the group it was asked about all the same (one the
// client cannot see leaves it empty), so the inspector's group filter
// finds it.
func TestInspectorRowOfGetDynamicToolsNamesItsGroup(t *testing.T) {
	t.Parallel()
	h, mgr := runHub(t, strings.Replace(flatFakeYAML(t.TempDir(), "", ""), "mode: flat", "mode: dynamic", 1), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	_, api := attachInspector(t, h)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"get_dynamic_tools","arguments":{"group":"f"}}}`)
	c.answer(`"g"`)
	c.send(`{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"get_dynamic_tools","arguments":{"group":"nope"}}}`)
	c.answer(`"n"`)
	resp, err := testClient.Get(api.URL + inspect.Prefix + "api/export")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	groups := map[string]string{}
	for line := range strings.Lines(string(export)) {
		var r struct {
			Method, Group string
			Params        *struct{ Text string }
		}
		mustJSON(t, line, &r)
		if r.Method == "tools/call" && r.Params != nil {
			groups[r.Params.Text] = r.Group
		}
	}
	if len(groups) != 2 {
		t.Fatalf("rows: %v\n%s", groups, export)
	}
	for params, group := range groups {
		want := "f"
		if strings.Contains(params, "nope") {
			want = ""
		}
		if group != want {
			t.Errorf("the row of %s names group %q, want %q", params, group, want)
		}
	}
}

// An inspector attached to a hub whose server has been up a while (the
// shared hub serves its inspector when a client's --ui asks, maybe hours
// after start) shows the server up since it came up, not since the
// inspector started.
func TestInspectorUptimeIsTheServersOwn(t *testing.T) {
	t.Parallel()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "", ""), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	ready := mgr.Servers()[0].Status().Since
	attached := time.Now()
	_, api := attachInspector(t, h)
	var ups struct {
		Groups []struct {
			Servers []struct{ Since *time.Time }
		}
	}
	getJSON(t, api.URL+inspect.Prefix+"api/upstreams", &ups)
	if len(ups.Groups) != 1 || len(ups.Groups[0].Servers) != 1 || ups.Groups[0].Servers[0].Since == nil {
		t.Fatalf("upstreams: %+v", ups)
	}
	if since := *ups.Groups[0].Servers[0].Since; ready.IsZero() || !since.Equal(ready) || !since.Before(attached) {
		t.Errorf("up since %s, want the server's own %s (before the inspector, %s)", since, ready, attached)
	}
}
