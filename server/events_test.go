package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// testUpstreamEnv makes the test binary, started as a child, the upstream
// of loggingUpstream instead of running tests.
const testUpstreamEnv = "DYNAMIC_MCP_SERVER_TEST_UPSTREAM"

func init() {
	if os.Getenv(testUpstreamEnv) != "" {
		loggingUpstream(os.Stdin, os.Stdout)
		os.Exit(0)
	}
}

// bootLogs is how many log messages loggingUpstream sends at once.
const bootLogs = 300

// loggingUpstream is an MCP server on in and out that logs bootLogs
// messages right after its initialize answer, before the hub has even
// said it is initialized, then one every millisecond until in ends. Its
// one tool, roots, asks the client for its roots (roots/list, without
// params) and answers with the answer.
func loggingUpstream(in io.Reader, out io.Writer) {
	w := bufio.NewWriter(out)
	var mu sync.Mutex
	send := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format+"\n", args...)
		w.Flush()
	}
	done := make(chan struct{})
	defer close(done)
	answers := make(chan string, 1)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Method == "initialize":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"logger","version":"1"}}}`, m.ID)
			for i := range bootLogs {
				send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"boot","data":%d}}`, i)
			}
			go func() {
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					case <-t.C:
						send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","logger":"tick","data":%d}}`, i)
					}
				}
			}()
		case m.Method == "tools/list":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"roots","inputSchema":{"type":"object"}}]}}`, m.ID)
		case m.Method == "tools/call":
			go func() {
				send(`{"jsonrpc":"2.0","id":"up-1","method":"roots/list"}`)
				text, _ := json.Marshal(<-answers)
				send(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, m.ID, text)
			}()
		case m.Method == "" && len(m.ID) > 0:
			answers <- line
		case m.Method == "ping":
			send(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
		case len(m.ID) > 0:
			send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		}
	}
}

// upstreamConfig is a config of group g, whose one server is
// loggingUpstream, with settings (YAML) added.
func upstreamConfig(t *testing.T, settings string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  g:\n    description: logs at once\n    command: %q\n    env: {%s: \"1\"}\n",
		t.TempDir(), settings, os.Args[0], testUpstreamEnv)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// The hub is whole before anything from an upstream can reach it, in
// either order of starting: `dynamic-mcp tools` starts the upstreams
// first, serve builds the hub first. Run with -race.
func TestHubWholeBeforeUpstreamEvents(t *testing.T) {
	t.Parallel()
	for _, upstreamsFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("upstreams first %v", upstreamsFirst), func(t *testing.T) {
			cfg := upstreamConfig(t, "")
			logger := testLogger()
			mgr := upstream.New(cfg, logger)
			defer mgr.Close()
			mgr.SetClientCapabilities(mcp.ClientCapabilities{})
			if upstreamsFirst {
				mgr.Start(t.Context())
			}
			h, err := New(cfg, mgr, logger)
			if err != nil {
				t.Fatal(err)
			}
			h.Run()
			if !upstreamsFirst {
				mgr.Start(t.Context())
			}
			s := mgr.Servers()[0]
			await.For(t, 10*time.Second, "the upstream", func() bool { return s.Status().State == upstream.StateReady })
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() { h.SetConfig(cfg) })
			}
			wg.Wait()
			// The boot logs were all taken by the hub's loop: none wait,
			// none were dropped, and the view has the upstream's tool.
			await.For(t, 5*time.Second, "the hub to take the logs", func() bool { return len(mgr.Events()) == 0 })
			if n := mgr.Dropped(); n != 0 {
				t.Errorf("%d notifications dropped", n)
			}
			await.For(t, 5*time.Second, "the view", func() bool {
				g := h.snapshot().view.GroupIndex["g"]
				return g != nil && len(g.Tools) == 1
			})
			if err := h.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// stdioClient is a client of the hub's stdio face, for tests.
type stdioClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]json.RawMessage
}

func serveStdio(t *testing.T, h *Hub) *stdioClient {
	hubIn, clientOut := io.Pipe()
	clientIn, hubOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.ServeStdio(ctx, hubIn, hubOut) }()
	c := &stdioClient{t: t, in: clientOut, lines: make(chan map[string]json.RawMessage, 1000)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the hub wrote %q: %v", sc.Text(), err)
				continue
			}
			c.lines <- m
		}
	}()
	t.Cleanup(func() {
		clientOut.Close()
		cancel()
		<-served
		hubOut.Close()
		for range c.lines {
		}
	})
	return c
}

func (c *stdioClient) send(msg string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, msg+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next message that is not a notification.
func (c *stdioClient) next() map[string]json.RawMessage {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatal("the hub closed stdout")
			}
			if _, isNotification := m["method"]; isNotification && m["id"] == nil {
				continue
			}
			return m
		case <-time.After(time.Minute): // bounds a hang, not a timing
			c.t.Fatal("no message from the hub")
		}
	}
}

// A request from an upstream reaches the client whose call caused it,
// without params when the upstream sent none, and the client's answer
// goes back to the upstream.
func TestUpstreamRequestReachesClient(t *testing.T) {
	t.Parallel()
	cfg := upstreamConfig(t, "call_timeout: 10s")
	logger := testLogger()
	mgr := upstream.New(cfg, logger)
	defer mgr.Close()
	h, err := New(cfg, mgr, logger)
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	defer h.Close()
	mgr.Start(t.Context())
	c := serveStdio(t, h)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"test","version":"1"}}}`)
	if m := c.next(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s := mgr.Servers()[0]
	await.For(t, 10*time.Second, "the upstream in the view", func() bool {
		g := h.snapshot().view.GroupIndex["g"]
		return s.Status().State == upstream.StateReady && g != nil && len(g.Tools) == 1
	})

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"g","name":"roots","args":{}}}}`)
	req := c.next()
	var method string
	_ = json.Unmarshal(req["method"], &method)
	if method != "roots/list" || req["id"] == nil {
		t.Fatalf("the client got %v, want roots/list", req)
	}
	if p, ok := req["params"]; ok {
		t.Errorf(`roots/list reached the client with "params": %s; the upstream sent none`, p)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///project","name":"p"}]}}`, req["id"]))
	resp := c.next()
	if string(resp["id"]) != "2" || !strings.Contains(string(resp["result"]), `file:///project`) {
		t.Errorf("tools/call: %v", resp)
	}
}

// nextOf returns the next message with method (a notification or a
// request), or with id (a response), skipping the others.
func (c *stdioClient) nextOf(method, id string) map[string]json.RawMessage {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatal("the hub closed stdout")
			}
			var got string
			_ = json.Unmarshal(m["method"], &got)
			if (method != "" && got == method) || (id != "" && got == "" && string(m["id"]) == id) {
				return m
			}
		case <-time.After(time.Minute): // bounds a hang, not a timing
			c.t.Fatalf("no %s%s from the hub", method, id)
		}
	}
}

// What an upstream sends during a call reaches the client before the
// call's result; log messages name their upstream; params pass through.
func TestUpstreamNotificationsReachClientInOrder(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\ngroups:\n  g:\n    description: fake\n    command: %q\n    args: [\"-flood\"]\n",
		t.TempDir(), fakeBin), false)
	c := serveStdio(t, h)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	c.nextOf("", "1")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	await.For(t, 10*time.Second, "the upstream in the view", func() bool {
		g := h.snapshot().view.GroupIndex["g"]
		return g != nil && len(g.Tools) > 0
	})

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"g","name":"progress","args":{"text":"hi"}},"_meta":{"progressToken":"mine"}}}`)
	for i := 1; i <= 3; i++ {
		m := c.nextOf("notifications/progress", "2")
		if m["params"] == nil {
			t.Fatalf("the result came before progress %d: %v", i, m)
		}
		var p struct {
			ProgressToken string `json:"progressToken"`
			Progress      int    `json:"progress"`
			Message       string `json:"message"`
		}
		if err := json.Unmarshal(m["params"], &p); err != nil || p.ProgressToken != "mine" || p.Progress != i || p.Message != "hi" {
			t.Errorf("progress %d: %s", i, m["params"])
		}
	}
	if m := c.nextOf("", "2"); !strings.Contains(string(m["result"]), "progressed hi") {
		t.Errorf("result: %s", m["result"])
	}

	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"g","name":"flood","args":{"text":"notifications/message","ms":3}}}}`)
	for i := range 3 {
		m := c.nextOf("notifications/message", "")
		var p struct {
			Level  string `json:"level"`
			Logger string `json:"logger"`
			Data   *int   `json:"data"`
		}
		if err := json.Unmarshal(m["params"], &p); err != nil || p.Level != "info" || p.Logger != "g/flood" || p.Data == nil || *p.Data != i {
			t.Errorf("log message %d: %s", i, m["params"])
		}
	}
	c.nextOf("", "3")
}
