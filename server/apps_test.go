package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// appsYAML is a hub in mode in front of three fakes: groups one and two
// both serve an MCP App at ui://dashboard/app.html (two declares the
// extension, one does not), plain serves none; profile plain shows plain
// alone, profile one shows one alone. group adds keys to group one.
func appsYAML(t *testing.T, mode, group string) string {
	return fmt.Sprintf(`mode: %s
state_dir: %q
audit: {path: "off"}
groups:
  one:
    description: first
    command: %q
    args: ["-name", "one", "-apps"]
%s  two:
    description: second
    command: %q
    args: ["-name", "two", "-apps", "-apps-declare", '{"mimeTypes":["text/html;profile=mcp-app"],"x":1}']
  plain:
    description: no apps
    command: %q
    args: ["-name", "plain"]
profiles:
  plain: {groups: [plain]}
  one: {groups: [one]}
`, mode, t.TempDir(), fakeBin, group, fakeBin, fakeBin)
}

// appsHub runs the hub of appsYAML, its upstreams all up.
func appsHub(t *testing.T, mode, group string) *Hub {
	t.Helper()
	h, mgr := runHub(t, appsYAML(t, mode, group), false)
	await.For(t, 10*time.Second, "the upstreams", func() bool {
		for _, s := range mgr.Servers() {
			if s.Status().State != upstream.StateReady {
				return false
			}
		}
		return true
	})
	await.For(t, 5*time.Second, "the view", func() bool { return h.snapshot().view.apps.Len() >= 3 })
	// Every profile's view too: one built while a server started declares
	// the skills extension it may bring (skills.go).
	await.For(t, 5*time.Second, "the profiles' views", func() bool {
		for _, v := range h.snapshot().profiles {
			if v.Starting {
				return false
			}
		}
		return true
	})
	return h
}

// appsSession is a 2025-era session of profile, initialized; it returns
// the initialize answer's capabilities too.
func appsSession(t *testing.T, h *Hub, profile string) (*pipeClient, json.RawMessage) {
	t.Helper()
	c := servePipes(t, h, StdioOptions{Profile: profile})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}},"clientInfo":{"name":"host","version":"1"}}}`)
	caps := jsonrpc.Field(jsonrpc.Field([]byte(c.answer("0")), "result"), "capabilities")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, caps
}

// resultOf is the result of an answer line, failing on an error.
func resultOf(t *testing.T, line string) []byte {
	t.Helper()
	res := jsonrpc.Field([]byte(line), "result")
	if len(res) == 0 {
		t.Fatalf("no result: %s", line)
	}
	return res
}

// The upstream's view tool as the client must see it in group g: its
// bytes as the fake wrote them, the two ui:// URIs in the group's
// namespace.
func appToolFor(g, name string) string {
	return `{"name":"` + name + `","description":"Show the dashboard","inputSchema":{"type":"object"},` +
		`"_meta":{"ui":{"resourceUri":"ui://` + g + `/dashboard/app.html","visibility":["model","app"]},"ui/resourceUri":"ui://` + g + `/hidden/app.html","x-other":"<kept>"}}`
}

// The ui:// resources of two groups that serve the same URI are both
// listed and read, each under a URI of its group's, the tools' _meta
// pointing at them; the resource's _meta.ui, mimeType and HTML come back
// byte for byte, a view the server does not list is read through the
// tool that names it, and the server's own URI is no URI of the hub's.
func TestAppsFlat(t *testing.T) {
	t.Parallel()
	h := appsHub(t, "flat", "")
	c, caps := appsSession(t, h, "")
	if got := string(jsonrpc.Field(jsonrpc.Field(caps, "extensions"), "io.modelcontextprotocol/ui")); got != `{"mimeTypes":["text/html;profile=mcp-app"],"x":1}` {
		t.Errorf("the extension declared %q, want two's settings (capabilities %s)", got, caps)
	}

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := string(resultOf(t, c.answer("1")))
	for _, g := range []string{"one", "two"} {
		if want := appToolFor(g, g+"__view"); !strings.Contains(list, want) {
			t.Errorf("tools/list lacks\n%s\nin %s", want, list)
		}
	}

	c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`)
	res := string(resultOf(t, c.answer("2")))
	for _, g := range []string{"one", "two"} {
		want := `{"uri":"ui://` + g + `/dashboard/app.html","name":"dashboard","mimeType":"text/html;profile=mcp-app","_meta":{"ui":` + fakeupstream.AppUIMeta + `}}`
		if !strings.Contains(res, want) {
			t.Errorf("resources/list lacks\n%s\nin %s", want, res)
		}
	}
	if strings.Contains(res, `"ui://dashboard/`) || strings.Contains(res, "hidden") {
		t.Errorf("resources/list shows a server's own ui:// URI or one it does not list: %s", res)
	}

	for i, uri := range []string{"ui://one/dashboard/app.html", "ui://two/dashboard/app.html", "ui://one/hidden/app.html"} {
		id := fmt.Sprint(10 + i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
		got := string(resultOf(t, c.answer(id)))
		want := `{"contents":[{"uri":"` + uri + `","mimeType":"text/html;profile=mcp-app","text":` + fakeupstream.AppText + `,"_meta":{"ui":` + fakeupstream.AppUIMeta + `}}]}`
		if got != want {
			t.Errorf("read %s\n got %s\nwant %s", uri, got, want)
		}
	}
	for i, uri := range []string{"ui://dashboard/app.html", "ui://three/dashboard/app.html", "ui://plain/dashboard/app.html"} {
		id := fmt.Sprint(20 + i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
		if got := c.answer(id); !strings.Contains(got, `"code":-32002`) {
			t.Errorf("read %s: %s, want resource not found", uri, got)
		}
	}
	// Both app servers have echo: a view's call by that name cannot be
	// told apart, and is answered as for a tool that does not exist.
	c.send(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if got := c.answer("30"); !strings.Contains(got, `"code":-32601`) {
		t.Errorf("a call of a name two app servers share: %s", got)
	}
}

// A view calls its server's tools by their own names (ext-apps
// callServerTool through the host): through the hub, in either mode, a
// name only one app server has reaches it, through the group's policy
// like any call; dynamic mode's get_dynamic_tools gives a tool's _meta.ui
// (and no other _meta), its URIs rewritten as in flat mode.
func TestAppsCallByServerName(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			h := appsHub(t, mode, "    policy:\n      - {action: deny, tool: pid, description: no pids}\n      - {action: allow, tool: \"*\"}\n")
			c, caps := appsSession(t, h, "one")
			if got := string(jsonrpc.Field(jsonrpc.Field(caps, "extensions"), "io.modelcontextprotocol/ui")); got != `{}` {
				t.Errorf("profile one: the extension declared %q, want {} (one serves an app, declares nothing)", got)
			}
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from the view"}}}`)
			if got := c.answer("1"); !strings.Contains(got, "from the view") || strings.Contains(got, `"isError":true`) {
				t.Errorf("the view's call of echo: %s", got)
			}
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid","arguments":{}}}`)
			if got := c.answer("2"); !strings.Contains(got, "no pids") {
				t.Errorf("the view's call of pid, which policy denies: %s", got)
			}
			if mode != "dynamic" {
				return
			}
			c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_dynamic_tools","arguments":{"group":"one"}}}`)
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal(resultOf(t, c.answer("3")), &r); err != nil || len(r.Content) == 0 {
				t.Fatalf("get_dynamic_tools: %v", err)
			}
			if want := `{"name":"view","description":"Show the dashboard","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://one/dashboard/app.html","visibility":["model","app"]}}}`; !strings.Contains(r.Content[0].Text, want) {
				t.Errorf("get_dynamic_tools lacks\n%s\nin %s", want, r.Content[0].Text)
			}
		})
	}
}

// A view without an app server is offered no extension; a 2026-07-28
// client finds it in server/discover and reads the view as a 2025 one.
func TestAppsExtensionPerViewAndEra(t *testing.T) {
	t.Parallel()
	h := appsHub(t, "flat", "")
	_, caps := appsSession(t, h, "plain")
	if ext := jsonrpc.Field(caps, "extensions"); ext != nil {
		t.Errorf("profile plain declares extensions %s, want none", ext)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}`
	for _, tc := range []struct{ profile, want string }{{"", `{"mimeTypes":["text/html;profile=mcp-app"],"x":1}`}, {"plain", ""}} {
		c := servePipes(t, h, StdioOptions{Profile: tc.profile, SessionID: "modern-" + tc.profile})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
		caps := jsonrpc.Field(resultOf(t, c.answer("1")), "capabilities")
		if got := string(jsonrpc.Field(jsonrpc.Field(caps, "extensions"), "io.modelcontextprotocol/ui")); got != tc.want {
			t.Errorf("profile %q: server/discover declares %q, want %q", tc.profile, got, tc.want)
		}
		if tc.profile != "" {
			continue
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"ui://two/dashboard/app.html",` + meta + `}}`)
		contents := jsonrpc.Field(resultOf(t, c.answer("2")), "contents")
		want := `[{"uri":"ui://two/dashboard/app.html","mimeType":"text/html;profile=mcp-app","text":` + fakeupstream.AppText + `,"_meta":{"ui":` + fakeupstream.AppUIMeta + `}}]`
		if string(contents) != want {
			t.Errorf("2026-07-28 read\n got %s\nwant %s", contents, want)
		}
	}
}

// A group that hides a ui:// resource hides it as any resource: not
// listed, not read, under either URI.
func TestAppsHidden(t *testing.T) {
	t.Parallel()
	h := appsHub(t, "flat", "    resources: {deny: [\"^ui://dashboard/\"]}\n")
	c, _ := appsSession(t, h, "one")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	if got := c.answer("1"); strings.Contains(got, "ui://") {
		t.Errorf("resources/list shows a hidden ui:// resource: %s", got)
	}
	for i, uri := range []string{"ui://one/dashboard/app.html", "ui://dashboard/app.html"} {
		id := fmt.Sprint(2 + i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
		if got := c.answer(id); !strings.Contains(got, `"code":-32002`) {
			t.Errorf("read hidden %s: %s", uri, got)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"ui://one/hidden/app.html"}}`)
	if got := c.answer("5"); !strings.Contains(got, "text/html;profile=mcp-app") {
		t.Errorf("read a ui:// resource the group does not hide: %s", got)
	}
}
