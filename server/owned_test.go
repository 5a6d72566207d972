package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// recordingPeer is a client that keeps what it is sent.
type recordingPeer struct {
	mu   sync.Mutex
	sent []string
}

func (p *recordingPeer) Notify(_ context.Context, msg []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, string(msg))
}

func (p *recordingPeer) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, ErrClientGone
}

func (p *recordingPeer) Listening(context.Context) {}
func (p *recordingPeer) Dropped() uint64           { return 0 }
func (p *recordingPeer) Answering() int            { return 0 }
func (p *recordingPeer) Client() string            { return "" }

// count is how many messages sent to the peer contain s.
func (p *recordingPeer) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.sent {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// Changes to a list within the window make one list_changed for a client
// whose list is out of date; one still waiting out its window when the hub
// closes is never sent: Close ends the window's goroutine and waits for it.
func TestListChangedCoalescedAndEndedByClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newTestHub(config.ModeFlat)
		defer h.mgr.Close()
		p := &recordingPeer{}
		sess := newSession("a", "stdio")
		sess.peer = p
		if err := h.routes.Add(sess); err != nil {
			t.Fatal(err)
		}
		sess.lists.Saw(listen.Tools, 1) // answered a list that is not the current one
		for range 5 {
			h.listens.Changed(listen.Tools)
		}
		time.Sleep(listen.Window)
		synctest.Wait()
		if n := p.count("notifications/tools/list_changed"); n != 1 {
			t.Fatalf("%d list_changed after 5 changes in one window, want 1", n)
		}
		h.listens.Changed(listen.Tools)
		h.routes.Remove(sess)
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * listen.Window)
		synctest.Wait()
		if n := p.count("notifications/tools/list_changed"); n != 1 {
			t.Errorf("%d list_changed: one was sent after Close", n)
		}
	})
}

// serverGoroutines are the stacks of the goroutines running code of this
// package (or of server/listen, whose goroutines the hub starts), or
// started by it, that are not in before, leaving out the caller's own.
func serverGoroutines(before map[string]bool) []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the caller's
			continue
		}
		id, _, _ := strings.Cut(g, " [")
		if before[id] {
			continue
		}
		if strings.Contains(g, "server.servePipes.func") {
			continue // the test's own goroutine, ending once it has sent ServeStdio's result
		}
		if strings.Contains(g, "dynamic-mcp/dynamic-mcp/server.") || strings.Contains(g, "dynamic-mcp/dynamic-mcp/server/listen.") {
			out = append(out, g)
		}
	}
	return out
}

// goroutineIDs are the ids ("goroutine N") of the goroutines running now.
func goroutineIDs() map[string]bool {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	ids := map[string]bool{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [")
		ids[id] = true
	}
	return ids
}

// silentUnsubscribeEnv makes the test binary, started as a child, the
// upstream silentUnsubscribe.
const silentUnsubscribeEnv = "DYNAMIC_MCP_SERVER_TEST_SILENT_UNSUBSCRIBE"

func init() {
	if os.Getenv(silentUnsubscribeEnv) != "" {
		silentUnsubscribe(os.Stdin, os.Stdout)
		os.Exit(0)
	}
}

// silentUnsubscribe is an MCP server with one resource, mem://a, that can
// be subscribed to and never answers resources/unsubscribe.
func silentUnsubscribe(in io.Reader, out io.Writer) {
	w := bufio.NewWriter(out)
	send := func(id json.RawMessage, result string) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		w.Flush()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "initialize":
			send(m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"silent","version":"1"}}`)
		case "resources/list":
			send(m.ID, `{"resources":[{"uri":"mem://a","name":"a"}]}`)
		case "resources/templates/list":
			send(m.ID, `{"resourceTemplates":[]}`)
		case "resources/subscribe", "ping":
			send(m.ID, `{}`)
		case "resources/unsubscribe":
			// never answered
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", m.ID)
			w.Flush()
		}
	}
}

// A session that ends does not wait for the upstreams it was subscribed
// to: their unsubscribes go out in the background (this one is never
// answered, and list_timeout is an hour), and Close cancels them and
// returns once they have ended. Serial: it looks for the package's
// goroutines started since it began, as every parallel test's hub is.
func TestSessionEndDoesNotWaitForUnsubscribe(t *testing.T) {
	before := goroutineIDs()
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {list_timeout: 1h}\ngroups:\n  g:\n    description: silent\n    command: %q\n    env: {%s: \"1\"}\n",
		t.TempDir(), os.Args[0], silentUnsubscribeEnv)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, testLogger())
	defer mgr.Close()
	mgr.SetClientCapabilities(mcp.ClientCapabilities{})
	h, err := New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Run()
	mgr.Start(context.Background())
	await.For(t, 10*time.Second, "the resource", func() bool { return h.snapshot().view.ResolveResource("mem://a") != nil })

	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"mem://a"}}`)
	if got := c.answer("1"); !strings.Contains(got, `"result":{}`) {
		t.Fatalf("subscribe: %s", got)
	}
	c.w.Close() // the client leaves
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the session's end waits for the upstream's unsubscribe")
	}

	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("Close waits for the upstream's unsubscribe")
	}
	// The session's Conn waits a second at most for its writer (jsonrpc's
	// closeWait, for a stream closing does not interrupt): on a loaded
	// machine the writer of this closed pipe may end just after. What
	// matters is that everything ends, not within that second.
	var left []string
	deadline := time.Now().Add(30 * time.Second)
	for left = serverGoroutines(before); len(left) > 0 && time.Now().Before(deadline); left = serverGoroutines(before) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("%d goroutines of the hub outlived Close by 30s:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// Close returns only when everything the hub started has ended, and once
// it has begun the hub starts nothing more: a late roots/list_changed or
// list change is dropped, a late session is forgotten at once.
func TestHubStartsNothingAfterClose(t *testing.T) {
	t.Parallel()
	h := newTestHub(config.ModeFlat)
	defer h.mgr.Close()
	sess := newSession("a", "stdio")
	sess.peer = &recordingPeer{}
	if err := h.routes.Add(sess); err != nil {
		t.Fatal(err)
	}
	sess.lists.Saw(listen.Tools, 1)
	h.listens.Changed(listen.Tools) // waits out its window when Close comes
	h.Run()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if h.spawn(func() {}) {
		t.Error("spawn started a goroutine after Close")
	}
	h.routes.RootsChanged(sess)
	h.listens.Changed(listen.Tools)
	if sess.Routing().RootsPending() || h.listens.Pending(listen.Tools) {
		t.Error("work left pending after Close: it would never be done")
	}
	late := newSession("b", "stdio")
	late.peer = &recordingPeer{}
	if err := h.routes.Add(late); err != nil {
		t.Fatal(err)
	}
	h.routes.Remove(late)
	h.routes.Remove(sess)
}
