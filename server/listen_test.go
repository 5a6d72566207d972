package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// listenMeta is the _meta of a 2026-07-28 request.
var listenMeta = modernMeta("2026-07-28")

// subscriptionID is the listen a notification says it belongs to, "" for
// none.
func subscriptionID(t *testing.T, m map[string]json.RawMessage) string {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m["params"], &p)
	return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
}

// A listen over stdio is acknowledged first, with what the hub agreed to;
// then an upstream's list_changed and a resources/updated of a URI the
// listen names reach it, each with the listen's id; a modern client gets
// no list_changed outside its listen; cancelling the listen ends it (and
// its resource subscription), and a listen open when the hub shuts down
// gets its result.
func TestListenOverStdio(t *testing.T) {
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10s", ""), true)
	waitFor(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__mutate"]; return ok })
	c := serveStdio(t, h)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + listenMeta + `}}`)
	c.nextOf("", "1")
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + listenMeta +
		`,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}}}`)
	ack := c.nextOf("notifications/subscriptions/acknowledged", "")
	if id := subscriptionID(t, ack); id != `"L"` {
		t.Fatalf("ack's subscriptionId %s, want \"L\": %s", id, ack["params"])
	}
	if !strings.Contains(string(ack["params"]), `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}`) {
		t.Errorf("ack: %s", ack["params"])
	}
	waitFor(t, 10*time.Second, "the subscription", func() bool {
		h.routes.mu.Lock()
		defer h.routes.mu.Unlock()
		return h.routes.subs["mem://a"] != nil
	})

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__touch","arguments":{"text":"mem://a"},` + listenMeta + `}}`)
	if m := c.nextOf("notifications/resources/updated", ""); subscriptionID(t, m) != `"L"` || !strings.Contains(string(m["params"]), `"uri":"mem://a"`) {
		t.Errorf("resources/updated: %s", m["params"])
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"f__mutate","arguments":{},` + listenMeta + `}}`)
	for told := false; ; {
		// Up to the answer of a request sent once the listen was told:
		// whatever the hub told the session of the change is in by then.
		m := c.nextAny()
		var method string
		_ = json.Unmarshal(m["method"], &method)
		switch {
		case method == "notifications/tools/list_changed" && subscriptionID(t, m) != `"L"`:
			t.Errorf("list_changed outside the listen: %s", m["params"])
		case method == "notifications/tools/list_changed" && !told:
			told = true
			c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + listenMeta + `}}`)
		}
		if string(m["id"]) == "4" {
			break
		}
	}

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	waitFor(t, 10*time.Second, "the listen to end", func() bool {
		for _, s := range h.sessionList() {
			if len(s.listenList()) > 0 {
				return false
			}
		}
		h.routes.mu.Lock()
		defer h.routes.mu.Unlock()
		return h.routes.subs["mem://a"] == nil
	})

	c.send(`{"jsonrpc":"2.0","id":"M","method":"subscriptions/listen","params":{` + listenMeta + `,"notifications":{"promptsListChanged":true}}}`)
	c.nextOf("notifications/subscriptions/acknowledged", "")
	go h.Close()
	m := c.nextOf("", `"M"`)
	if !strings.Contains(string(m["result"]), `"io.modelcontextprotocol/subscriptionId":"M"`) {
		t.Errorf("listen's result at shutdown: %s", m["result"])
	}
}

// A listen asking for nothing is acknowledged and answered at once; one
// without notifications is refused; a session holds maxSessionListens at
// most.
func TestListenRefusalsAndBounds(t *testing.T) {
	h := newTestHub(config.ModeFlat)
	defer h.mgr.Close()
	defer h.Close()
	p := &recordingPeer{}
	sess := newSession("a", "stdio")
	sess.peer = p
	if err := h.addSession(sess); err != nil {
		t.Fatal(err)
	}
	listenReq := func(id int, notifications string) *jsonrpc.Message {
		m, err := jsonrpc.Decode([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{%s%s}}`, id, listenMeta, notifications)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	res, err := h.serveListen(t.Context(), sess, listenReq(1, `,"notifications":{}`))
	if err != nil || !strings.Contains(string(res), `"io.modelcontextprotocol/subscriptionId":1`) || p.count("acknowledged") != 1 {
		t.Errorf("empty listen: %s, %v; sent %q", res, err, p.sent)
	}
	if _, err := h.serveListen(t.Context(), sess, listenReq(2, ``)); jsonrpc.ToError(err).Code != codeInvalidParams {
		t.Errorf("listen without notifications: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, maxSessionListens)
	for i := range maxSessionListens {
		go func() {
			_, err := h.serveListen(ctx, sess, listenReq(10+i, `,"notifications":{"toolsListChanged":true}`))
			done <- err
		}()
	}
	waitFor(t, 10*time.Second, "the listens", func() bool { return len(sess.listenList()) == maxSessionListens })
	if _, err := h.serveListen(t.Context(), sess, listenReq(99, `,"notifications":{"toolsListChanged":true}`)); err == nil {
		t.Errorf("listen %d of a session was not refused", maxSessionListens+1)
	}
	cancel()
	for range maxSessionListens {
		<-done
	}
	if n := len(sess.listenList()); n != 0 {
		t.Errorf("%d listens left after they were cancelled", n)
	}
}

// A listen's changes wait coalesced: however many list changes and
// updates of one URI come before it sends, it sends one of each; the hub
// never waits on it.
func TestListenCoalesces(t *testing.T) {
	l := &listen{meta: json.RawMessage(`{"io.modelcontextprotocol/subscriptionId":7}`), lists: [listKinds]bool{listTools: true},
		wake: make(chan struct{}, 1), uris: map[string]bool{"mem://a": true}, upd: map[string]json.RawMessage{}}
	for i := range 100 {
		l.listChanged(listTools, uint64(i+1))
		l.listChanged(listPrompts, uint64(i+1)) // not asked for
		l.updated("mem://a", json.RawMessage(fmt.Sprintf(`{"uri":"mem://a","n":%d}`, i)))
		l.updated("mem://b", json.RawMessage(`{"uri":"mem://b"}`)) // not named
	}
	got := l.take()
	if len(got) != 2 {
		t.Fatalf("%d notifications, want 2: %q", len(got), got)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`; string(got[0]) != want {
		t.Errorf("list_changed %s, want %s", got[0], want)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a","n":99,"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`; string(got[1]) != want {
		t.Errorf("updated %s, want %s", got[1], want)
	}
	l.listChanged(listTools, 100) // the hash it was told of already
	if got := l.take(); len(got) != 0 {
		t.Errorf("told again of a list it knows: %q", got)
	}
}

// nextAny is the next message of any kind.
func (c *stdioClient) nextAny() map[string]json.RawMessage {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the hub closed stdout")
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the hub in 10s")
		return nil
	}
}
