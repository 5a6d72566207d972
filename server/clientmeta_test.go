package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/rounds"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// modernCall is a 2026-07-28 tools/call of name with id, stating caps
// (a JSON object, "" for none) in its _meta.
func modernCall(id, name, caps string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"}`
	if caps != "" {
		meta += `,"io.modelcontextprotocol/clientCapabilities":` + caps
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{"text":"hi"},"_meta":{` + meta + `}}}`
}

// A 2026-07-28 client sends no initialize: what it states in each
// request's _meta is what it can do. An upstream's elicitation during a
// call that states elicitation reaches it (as an input_required round),
// a prompt policy asks it, and a
// later request that states none is refused both, with no guess carried
// over from the first.
func TestModernClientCapabilitiesComeFromMeta(t *testing.T) {
	t.Parallel()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    policy:
      - {action: prompt, tool: "echo"}
      - {action: allow, tool: "*"}
`), false)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__ask"]; return ok })
	c := servePipes(t, h, StdioOptions{})

	// The upstream's elicitation reaches a 2026-07-28 client as an
	// input_required round (see inputrequired_test.go), not a request.
	c.send(modernCall("1", "f__ask", `{"elicitation":{}}`))
	round := answerOf(t, reply(c, "1"))
	if _, ok := round.InputRequests["input-1"]; !ok {
		t.Fatalf("the upstream's elicitation, stated in _meta: %+v", round)
	}
	retry := strings.Replace(modernCall("11", "f__ask", `{"elicitation":{}}`), `"_meta":`,
		`"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+round.RequestState+`","_meta":`, 1)
	c.send(retry)
	if got := reply(c, "11"); !strings.Contains(got, "Ada") {
		t.Errorf("the upstream's elicitation, answered: %s", got)
	}
	// A prompt policy asks it in an input_required round too (see
	// promptround_test.go).
	c.send(modernCall("2", "f__echo", `{"elicitation":{}}`))
	question := answerOf(t, reply(c, "2"))
	if _, ok := question.InputRequests[rounds.PromptInputKey]; !ok {
		t.Fatalf("a prompt policy asking a client that stated elicitation: %+v", question)
	}
	c.send(strings.Replace(modernCall("12", "f__echo", `{"elicitation":{}}`), `"_meta":`,
		`"inputResponses":{"`+rounds.PromptInputKey+`":{"action":"accept","content":{}}},"requestState":"`+question.RequestState+`","_meta":`, 1))
	if got := c.answer("12"); !strings.Contains(got, `"result"`) || strings.Contains(got, "isError") || strings.Contains(got, "input_required") {
		t.Errorf("a prompt policy's question, answered: %s", got)
	}
	if caps, known := h.routes.List()[0].ClientCapabilities(); !known || caps.Elicitation == nil {
		t.Errorf("session capabilities %+v, known %v", caps, known)
	}

	c.send(modernCall("3", "f__ask", `{}`))
	if got := c.answer("3"); !strings.Contains(got, "does not support elicitation/create") {
		t.Errorf("the upstream's elicitation, none stated: %s", got)
	}
	// A prompt policy for a client that states no elicitation waits in
	// the approval inbox (approvals_test.go): denied there, -32001.
	c.send(modernCall("4", "f__echo", `{}`))
	await.For(t, 5*time.Second, "the approval inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 1 })
	if err := h.Inbox().Deny(h.Inbox().Approvals().Pending[0].ID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := c.answer("4"); !strings.Contains(got, "-32001") {
		t.Errorf("a prompt policy, no capabilities stated: %s", got)
	}
	// 2026-07-28 requires the statement: a request without one is refused.
	c.send(modernCall("5", "f__echo", ""))
	if got := c.answer("5"); !strings.Contains(got, "-32602") {
		t.Errorf("a request that states no capabilities: %s", got)
	}
}

// answeringPeer answers every request of the hub's with {} and counts them.
type answeringPeer struct{ calls atomic.Int32 }

func (p *answeringPeer) Notify(context.Context, []byte) {}
func (p *answeringPeer) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	p.calls.Add(1)
	return json.RawMessage(`{}`), nil
}
func (p *answeringPeer) Listening(context.Context) {}
func (p *answeringPeer) Dropped() uint64           { return 0 }
func (p *answeringPeer) Answering() int            { return 0 }
func (p *answeringPeer) Client() string            { return "" }

// An upstream's elicitation in url mode reaches only a client that
// declared that mode, one in form mode only a client that answers forms
// (one that declared elicitation without a mode answers forms alone).
func TestURLElicitationOnlyToClientsThatDeclareIt(t *testing.T) {
	t.Parallel()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "", ""), false)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	s := mgr.Servers()[0]
	for _, c := range []struct {
		declared, params string
		passed           bool
	}{
		{`{"elicitation":{}}`, `{"message":"m","requestedSchema":{"type":"object"}}`, true},
		{`{"elicitation":{}}`, `{"mode":"form","message":"m","requestedSchema":{"type":"object"}}`, true},
		{`{"elicitation":{}}`, `{"mode":"url","message":"m","url":"https://example.com/x","elicitationId":"1"}`, false},
		{`{"elicitation":{"form":{}}}`, `{"mode":"url","message":"m","url":"https://example.com/x","elicitationId":"1"}`, false},
		{`{"elicitation":{"url":{}}}`, `{"mode":"url","message":"m","url":"https://example.com/x","elicitationId":"1"}`, true},
		{`{"elicitation":{"url":{}}}`, `{"message":"m","requestedSchema":{"type":"object"}}`, false},
		{`{"elicitation":{"form":{},"url":{}}}`, `{"message":"m","requestedSchema":{"type":"object"}}`, true},
	} {
		peer := &answeringPeer{}
		sess, err := h.Open("url-"+c.declared+c.params, "test", peer)
		if err != nil {
			t.Fatal(err)
		}
		sess.sess.stated(era.Statement{Modern: true, Version: "2026-07-28", Capabilities: []byte(c.declared)})
		_, err = h.routes.Request(t.Context(), routes.ServerRequest{Server: s, Method: "elicitation/create", Params: json.RawMessage(c.params), Owner: sess.sess})
		if passed := peer.calls.Load() == 1; passed != c.passed || (err == nil) != c.passed {
			t.Errorf("declared %s, asked %s: passed to the client %v, err %v", c.declared, c.params, passed, err)
		}
		sess.Close()
	}
}

// What a 2026-07-28 request states is the session's: its protocol
// version and client info too, for the inspector and the traces; a
// request of an older era changes nothing, and capabilities that do not
// decode count as none.
func TestStatedClientMeta(t *testing.T) {
	t.Parallel()
	s := newSession("s", "test")
	s.stated(era.StateOf(scan(t, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`)))
	if _, known := s.ClientCapabilities(); known || s.ProtocolVersion() != "" {
		t.Errorf("a 2025-11-25 request's _meta was taken: version %q", s.ProtocolVersion())
	}
	s.stated(era.StateOf(scan(t, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"n","version":"2"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{}}}}`)))
	caps, known := s.ClientCapabilities()
	if !known || caps.Sampling == nil || caps.Roots == nil || caps.Elicitation != nil || s.ProtocolVersion() != "2026-07-28" || s.GetClientInfo().Name != "n" {
		t.Errorf("caps %+v known %v, version %q, info %+v", caps, known, s.ProtocolVersion(), s.GetClientInfo())
	}
	s.stated(era.StateOf(scan(t, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":7}}}`)))
	if caps, _ := s.ClientCapabilities(); caps.Sampling != nil || caps.Roots != nil || s.GetClientInfo().Name != "n" {
		t.Errorf("after capabilities that do not decode: %+v, info %+v", caps, s.GetClientInfo())
	}
}

func scan(t *testing.T, params string) (jsonrpc.Object, json.RawMessage) {
	t.Helper()
	o, err := jsonrpc.ScanObject([]byte(params))
	if err != nil {
		t.Fatal(err)
	}
	return o, json.RawMessage(params)
}
