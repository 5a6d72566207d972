package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A rule naming an argument the tool's schema does not have is a warning
// of the view once the tool is known, naming the arguments it has.
func TestViewWarnsOfUnknownArguments(t *testing.T) {
	t.Parallel()
	h := hidingHub(t)
	want := `policy rule typo names argument "txt", which tool echo of f/f does not have (its arguments: ms, text)`
	if got := h.snapshot().view.Warnings; len(got) != 1 || got[0] != want {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

// hidingHub runs a flat-mode hub in front of one fake upstream whose group
// hides res/1 by URI, res-2 by name, the template item by name and the
// prompt prompt-1.
func hidingHub(t *testing.T) *Hub {
	t.Helper()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    resources: {deny: ["res/1$", "^res-2$", "^item$"]}
    prompts: {deny: ["^prompt-1$"]}
    policy:
      - {name: typo, action: deny, tool: "echo", args: {txt: "x"}}
      - {name: fine, action: deny, tool: "echo", args: {TEXT: "x"}}
`), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__touch"]; return ok })
	return h
}

// errorOf is the error member of an answer line, with the name or URI the
// request asked for taken out, so that the answers for a hidden and a
// missing name can be compared.
func errorOf(line, name string) string {
	i := strings.Index(line, `"error":`)
	if i < 0 {
		return "no error: " + line
	}
	return strings.ReplaceAll(line[i:], name, "NAME")
}

// A resource, template or prompt the group hides is answered by read,
// subscribe, unsubscribe and complete exactly as one that does not exist,
// nothing is forwarded, and its updates never reach the client.
func TestHiddenIsHiddenEverywhere(t *testing.T) {
	t.Parallel()
	h := hidingHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	if got := c.answer("1"); strings.Contains(got, "res/1") || strings.Contains(got, "res/2") || !strings.Contains(got, "fake://fake/res/3") {
		t.Fatalf("resources/list: %s", got)
	}
	id := 10
	ask := func(method, params string) string {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		return c.answer(fmt.Sprint(id))
	}
	same := func(what, method, hiddenParams, hidden, missingParams, missing string) {
		t.Helper()
		got, want := errorOf(ask(method, hiddenParams), hidden), errorOf(ask(method, missingParams), missing)
		if got != want || strings.HasPrefix(want, "no error") {
			t.Errorf("%s: hidden %s answered\n  %s\nmissing %s answered\n  %s", what, hidden, got, missing, want)
		}
	}
	uri := func(u string) string { return fmt.Sprintf(`{"uri":%q}`, u) }
	for _, hidden := range []string{"fake://fake/res/1", "fake://fake/res/2", "fake://fake/item/7"} {
		same("read", "resources/read", uri(hidden), hidden, uri("fake://fake/none/9"), "fake://fake/none/9")
		// A URI nobody lists may still be watched at the only server that
		// supports subscriptions, so a hidden one is compared with the
		// answer for a URI no server could own; the fake answers every
		// subscribe it gets with {}, so -32002 also says nothing was
		// forwarded.
		for _, method := range []string{"resources/read", "resources/subscribe", "resources/unsubscribe"} {
			if got := errorOf(ask(method, uri(hidden)), hidden); got != `"error":{"code":-32002,"message":"Resource not found","data":{"uri":"NAME"}}}`+"\n" {
				t.Errorf("%s %s: %s, want -32002 Resource not found", method, hidden, got)
			}
		}
	}
	complete := func(ref string) string {
		return `{"ref":` + ref + `,"argument":{"name":"topic","value":"a"}}`
	}
	same("complete a prompt", "completion/complete", complete(`{"type":"ref/prompt","name":"f__prompt-1"}`), "f__prompt-1",
		complete(`{"type":"ref/prompt","name":"f__prompt-9"}`), "f__prompt-9")
	same("complete a template", "completion/complete", complete(`{"type":"ref/resource","uri":"fake://fake/item/{id}"}`), "fake://fake/item/{id}",
		complete(`{"type":"ref/resource","uri":"fake://fake/none/{id}"}`), "fake://fake/none/{id}")
	same("complete a resource", "completion/complete", complete(`{"type":"ref/resource","uri":"fake://fake/res/1"}`), "fake://fake/res/1",
		complete(`{"type":"ref/resource","uri":"fake://fake/none/1"}`), "fake://fake/none/1")
	same("get a prompt", "prompts/get", `{"name":"f__prompt-1"}`, "f__prompt-1", `{"name":"f__prompt-9"}`, "f__prompt-9")

	// The visible ones still work, so the test can tell.
	if got := ask("resources/read", uri("fake://fake/res/3")); !strings.Contains(got, "content of fake://fake/res/3") {
		t.Fatalf("read of a visible resource: %s", got)
	}
	if got := ask("completion/complete", complete(`{"type":"ref/prompt","name":"f__prompt-2"}`)); !strings.Contains(got, `"result"`) {
		t.Fatalf("complete of a visible prompt: %s", got)
	}
	if got := ask("resources/subscribe", uri("fake://fake/res/3")); !strings.Contains(got, `"result":{}`) {
		t.Fatalf("subscribe to a visible resource: %s", got)
	}

	// A subscription made before a reload hid its URI (put in by hand
	// here): the upstream's updates for it stop at the hub.
	owner := h.mgr.Servers()[0]
	held := routes.Subscriber[client]{Session: h.routes.List()[0],
		Resolve:   func(context.Context, string, bool) (*upstream.Server, bool) { return owner, false },
		Routed:    func(*upstream.Server, string) {},
		Subscribe: func(context.Context, *upstream.Server, string) error { return nil }, // as if held upstream already
	}
	if err := h.routes.SubscribeURI(t.Context(), held, "fake://fake/res/1", true); err != nil {
		t.Fatal(err)
	}
	touched := regexp.MustCompile(`notifications/resources/updated","params":\{"uri":"([^"]*)"`)
	var updates []string
	for _, u := range []string{"fake://fake/res/1", "fake://fake/res/2", "fake://fake/item/7", "fake://fake/res/3"} {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":%q}}}`, id, u))
		for _, m := range touched.FindAllStringSubmatch(c.answerAll(fmt.Sprint(id)), -1) {
			updates = append(updates, m[1])
		}
	}
	// The last update is sent before the last answer; ping once more so
	// that it has been read either way.
	c.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	for _, m := range touched.FindAllStringSubmatch(c.answerAll("99"), -1) {
		updates = append(updates, m[1])
	}
	if strings.Join(updates, " ") != "fake://fake/res/3" {
		t.Errorf("updates that reached the client: %q, want only fake://fake/res/3", updates)
	}
}

// A reload that hides a resource a client is subscribed to ends the
// subscription: the upstream is unsubscribed and the client hears no more.
func TestReloadEndsSubscriptionsToHiddenResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yaml := func(deny string) string {
		return flatFakeYAML(dir, "", fmt.Sprintf("    resources: {deny: [%q]}\n", deny))
	}
	h, mgr := runHub(t, yaml("^nothing$"), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__touch"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"fake://fake/res/3"}}`)
	if got := c.answer("1"); !strings.Contains(got, `"result":{}`) {
		t.Fatalf("subscribe: %s", got)
	}
	subscribed := func() bool { return h.routes.Subscribed("fake://fake/res/3") }
	if !subscribed() {
		t.Fatal("no subscription")
	}
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml("res/3$")))
	if err != nil {
		t.Fatal(err)
	}
	mgr.Apply(cfg)
	h.SetConfig(cfg)
	if subscribed() {
		t.Error("the subscription to a resource the reload hid is kept")
	}
}
