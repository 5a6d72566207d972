package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// fakeHub runs a hub in flat mode in front of one fake upstream "f"
// started with args, ready to serve.
func fakeHub(t *testing.T, args ...string) *Hub { return fakeHubB(t, args...) }

func fakeHubB(t testing.TB, args ...string) *Hub {
	t.Helper()
	return fakeHubSettingsB(t, "", args...)
}

// fakeHubSettingsB is fakeHubB with more settings.
func fakeHubSettingsB(t testing.TB, settings string, args ...string) *Hub {
	t.Helper()
	if settings != "" {
		settings = ", " + settings
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s"+settings, "    args: ["+strings.Join(quoted, ", ")+"]\n"), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	return h
}

// pipeClient talks to ServeStdio over pipes.
type pipeClient struct {
	t    testing.TB
	w    *io.PipeWriter
	r    *bufio.Reader
	pr   *io.PipeReader
	done chan error
}

func servePipes(t testing.TB, h *Hub, opts StdioOptions) *pipeClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{t: t, w: inW, r: bufio.NewReaderSize(outR, 1<<20), pr: outR, done: make(chan error, 1)}
	go func() { c.done <- h.ServeStdioWith(context.Background(), inR, outW, opts) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return c
}

// send writes s to the hub, or fails the test if the hub's session ended
// (it returned, say refusing the session) before it read s: a write to
// a pipe no one reads would wait for good.
func (c *pipeClient) send(s string) {
	c.t.Helper()
	wrote := make(chan error, 1)
	go func() { _, err := io.WriteString(c.w, s+"\n"); wrote <- err }()
	select {
	case err := <-wrote:
		if err != nil {
			c.t.Fatal(err)
		}
	case err := <-c.done:
		c.done <- err // for a test that waits for the session's end
		select {
		case werr := <-wrote: // read, then the session ended
			if werr == nil {
				return
			}
		default:
		}
		c.t.Fatalf("the session ended (%v) before the hub read %.200s", err, s)
	}
}

// initialize makes the handshake of 2025-06-18 (initializeMsg, id 0).
func (c *pipeClient) initialize() {
	c.t.Helper()
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// answer reads until the answer to id, skipping notifications.
func (c *pipeClient) answer(id string) string {
	all := c.answerAll(id)
	return all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
}

// answersAt reads until every id is answered, in any order, and returns
// the answers by id with how long after start each was read;
// notifications are skipped.
func (c *pipeClient) answersAt(start time.Time, ids ...string) (map[string]string, map[string]time.Duration) {
	c.t.Helper()
	got, at := map[string]string{}, map[string]time.Duration{}
	for len(got) < len(ids) {
		all := c.readUntil(func(line string) bool { return !strings.Contains(line, `"method"`) })
		line := all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
		for _, id := range ids {
			if strings.Contains(line, `"id":`+id+`,`) {
				got[id], at[id] = line, time.Since(start)
			}
		}
	}
	return got, at
}

// answerAll reads until the answer to id and returns every line read,
// notifications included.
func (c *pipeClient) answerAll(id string) string {
	c.t.Helper()
	return c.readUntil(func(line string) bool {
		return strings.Contains(line, `"id":`+id+`,`) && !strings.Contains(line, `"method"`)
	})
}

// readUntil reads lines until one satisfies done and returns every line
// read, that one last.
func (c *pipeClient) readUntil(done func(line string) bool) string {
	c.t.Helper()
	got := make(chan string, 1)
	go func() {
		var all strings.Builder
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				got <- all.String() + "read: " + err.Error() + "\n"
				return
			}
			all.WriteString(line)
			if done(line) {
				got <- all.String()
				return
			}
		}
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(2 * time.Minute): // a deadline for a hung hub, not a timing: a busy machine must not fail this
		c.t.Fatal("no answer within 2m")
		return ""
	}
}

const initializeMsg = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"t","version":"1"}}}`

// A client's roots/list_changed storm does not hold up its own requests,
// and ids come back as the client wrote them.
func TestStdioNotificationsDoNotBlock(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	for range 5000 {
		c.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	}
	start := time.Now()
	c.send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`)
	if got := c.answer("9007199254740993"); !strings.Contains(got, `"result":{}`) {
		t.Errorf("ping: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"abc"}}}`)
	if got := c.answer("1e2"); !strings.Contains(got, `"text":"abc"`) {
		t.Errorf("echo: %s", got)
	}
	if time.Since(start) > 3*time.Second*await.Slow {
		t.Errorf("answers took %v", time.Since(start))
	}
}

// A client that stops reading stdout while an upstream floods it with log
// messages: its notifications are dropped, and once a write waits past the
// write timeout the client is taken to be gone and serving ends cleanly.
func TestStdioClientStopsReading(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-flood")
	c := servePipes(t, h, StdioOptions{WriteTimeout: 300 * time.Millisecond})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__flood","arguments":{"text":"notifications/message","ms":50000}}}`)
	// Now read nothing more.
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("serving goes on with a client that does not read")
	}
}

// A 2026-07-28 request that came without a session is answered without
// one (Hub.Answer): no session is made for it, none is listed, and its
// call's progress still reaches its caller (the Peer the face gave, its
// response) under the token it chose. While the call runs, the client its
// progress is routed to (routes.Table.Progress) is the request's own
// oneRequest, not a session, even one kept unlisted.
func TestSessionlessRequestMakesNoSession(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	var mu sync.Mutex
	var routed []client // the clients the call's progress was routed to, as each came
	peer := &hookedPeer{notified: func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range h.routes.Progress() {
			routed = append(routed, c)
		}
	}}
	msg := decodeMsg(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__progress","arguments":{"text":"hi"},`+
		`"_meta":{"progressToken":"mine","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	res, err := h.Answer(t.Context(), SessionOptions{ID: "one-request", Transport: "streamable-http", Peer: peer}, msg)
	if err != nil || jsonrpc.Field(res, "content") == nil || string(jsonrpc.Field(res, "isError")) == "true" {
		t.Fatalf("a sessionless tools/call: %s, %v", res, err)
	}
	mu.Lock()
	if len(routed) == 0 {
		t.Error("no progress route was seen while the call ran")
	}
	for _, c := range routed {
		if _, ok := c.(*oneRequest); !ok {
			t.Errorf("a sessionless request's call was routed to a %T, want its oneRequest", c)
		}
	}
	mu.Unlock()
	if n := len(h.Sessions().Info()); n != 0 {
		t.Errorf("the hub lists %d sessions after a sessionless request, want none", n)
	}
	if peer.count(`"progressToken":"mine"`) == 0 {
		t.Errorf("the call's progress did not reach its caller (%d notifications)", peer.count(""))
	}
}

// hookedPeer is a recordingPeer that calls notified after recording each
// notification, while the hub is sending it.
type hookedPeer struct {
	recordingPeer
	notified func()
}

func (p *hookedPeer) Notify(ctx context.Context, msg []byte) {
	p.recordingPeer.Notify(ctx, msg)
	p.notified()
}
