package server

import (
	"context"
	"sync"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu    sync.Mutex
	calls []traffic.Call
	hops  []traffic.Hop
	msgs  []traffic.Message
	open  int // calls started and not ended
}

func (r *recorder) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open++
	return ctx
}

func (r *recorder) CallEnded(_ context.Context, c *traffic.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open--
	r.calls = append(r.calls, *c)
}

func (r *recorder) HopStarted(ctx context.Context, _ *traffic.Hop) context.Context { return ctx }

func (r *recorder) HopEnded(_ context.Context, h *traffic.Hop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.Call == nil {
		h.Method = "no call: " + h.Method
	}
	r.hops = append(r.hops, *h)
}

func (r *recorder) Message(_ context.Context, m *traffic.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, *m)
}

func (r *recorder) call(id string) (traffic.Call, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if string(c.ID) == id {
			return c, true
		}
	}
	return traffic.Call{}, false
}

// An observer sees each request with its routing, policy decision, hops
// and outcome, the id as the client sent it.
func TestObserverSeesEachCall(t *testing.T) {
	t.Parallel()
	h := hidingHub(t)
	rec := &recorder{}
	h.Traffic().Observe(rec)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`)
	c.answer(`"a"`)
	c.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`)
	c.answer(`"b"`)
	c.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"f__nope","arguments":{}}}`)
	c.answer(`"c"`)
	c.send(`{"jsonrpc":"2.0","id":"d","method":"tools/list"}`)
	c.answer(`"d"`)

	for _, tc := range []struct {
		id                          string
		method, group, target, rule string
		action                      string
		status                      traffic.Status
	}{
		{`0`, "initialize", "", "", "", "", traffic.StatusOK},
		{`"a"`, "tools/call", "f", "echo", "", "allow", traffic.StatusOK},
		{`"b"`, "tools/call", "f", "echo", "fine", "deny", traffic.StatusBlocked},
		{`"c"`, "tools/call", "", "f__nope", "", "", traffic.StatusNotFound},
		{`"d"`, "tools/list", "", "", "", "", traffic.StatusOK},
	} {
		got, ok := rec.call(tc.id)
		if !ok {
			t.Errorf("call %s not observed", tc.id)
			continue
		}
		if got.Method != tc.method || got.Group != tc.group || got.Target != tc.target || got.Rule != tc.rule ||
			got.Action != tc.action || got.Status != tc.status || got.Session != "stdio" || got.Transport != "stdio" || got.Duration <= 0 {
			t.Errorf("call %s observed as %+v", tc.id, got)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.open != 0 {
		t.Errorf("%d calls started and never ended", rec.open)
	}
	// One hop: the allowed call; the blocked one never left the hub.
	var hops []string
	for _, hp := range rec.hops {
		hops = append(hops, hp.Method+" "+hp.Group+"/"+hp.Server+" "+hp.Transport+" "+hp.Protocol)
	}
	if len(hops) != 1 || hops[0] != "tools/call f/f stdio 2025-11-25" {
		t.Errorf("hops %q", hops)
	}
	var fromClient bool
	for _, m := range rec.msgs {
		fromClient = fromClient || m.Direction == traffic.FromClient && m.Method == "notifications/initialized"
	}
	if !fromClient {
		t.Errorf("the client's notification was not observed: %+v", rec.msgs)
	}
}
