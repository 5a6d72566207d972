package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// call runs one request through i as the hub would: started, one hop,
// ended; params are its params and the upstream's result.
func call(i *Inspector, id int, params []byte) {
	c := &traffic.Call{Session: "s1", Transport: "stdio", ID: json.RawMessage(fmt.Sprint(id)), Method: "tools/call",
		Params: params, Start: time.Now()}
	ctx := i.CallStarted(context.Background(), c)
	h := &traffic.Hop{Group: "g", Server: "g", Transport: "stdio", Protocol: "2025-11-25", Method: "tools/call", Params: params, Start: time.Now()}
	hctx := i.HopStarted(ctx, h)
	h.Result, h.Duration = params, time.Millisecond
	i.HopEnded(hctx, h)
	c.Group, c.Server, c.Target, c.Rule, c.Action = "g", "g", "echo", "", "allow"
	c.Result, c.Status, c.Duration = params, traffic.StatusOK, 2*time.Millisecond
	i.CallEnded(ctx, c)
}

// A row joins the request, the policy decision, its hops, the messages
// that came during it and the answer; a message during no request is a
// row of its own.
func TestRowJoinsWhatHappenedForARequest(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	c := &traffic.Call{Session: "s1", User: "jwt:alice", Transport: "streamable-http", Protocol: "2025-11-25", ID: json.RawMessage(`"a"`),
		Method: "tools/call", Params: json.RawMessage(`{"name":"web__fetch","arguments":{"url":"file:///etc/passwd"}}`), Start: time.Now()}
	ctx := i.CallStarted(context.Background(), c)
	i.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Server: "web", Method: "notifications/progress",
		Params: json.RawMessage(`{"progress":1}`)})
	c.Group, c.Server, c.Target, c.Rule, c.Action = "web", "web", "fetch", "no-local-files", "deny"
	c.Err = &jsonrpc.Error{Code: -32001, Message: "no local files", Data: map[string]string{"rule": "no-local-files", "action": "deny"}}
	c.Status, c.Duration = traffic.StatusBlocked, time.Millisecond
	i.CallEnded(ctx, c)
	i.Message(context.Background(), &traffic.Message{Direction: traffic.FromUpstream, Server: "web", Method: "notifications/tools/list_changed"})

	rows := i.rows()
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	r := rows[0]
	if r.Kind != kindRequest || r.ID != `"a"` || r.User != "jwt:alice" || r.Group != "web" || r.Target != "fetch" || r.Rule != "no-local-files" ||
		r.Action != "deny" || r.Status != "blocked" || r.Protocol != "2025-11-25" || r.Error == nil || r.Error.Code != -32001 ||
		r.Error.Data.IsZero() || r.Error.Data.shown().Text != `{"action":"deny","rule":"no-local-files"}` {
		t.Errorf("blocked call kept as %+v (error %+v)", r, r.Error)
	}
	if len(r.Messages) != 1 || r.Messages[0].Method != "notifications/progress" {
		t.Errorf("the progress during the call: %+v", r.Messages)
	}
	if m := rows[1]; m.Kind != kindMessage || m.Method != "notifications/tools/list_changed" || m.Server != "web" || len(m.Messages) != 1 {
		t.Errorf("the list_changed: %+v", m)
	}
}

// A hop's failure of transport has no JSON-RPC code; the client's answer
// for it always has one.
func TestErrorsKeptAsSeen(t *testing.T) {
	if e := keepError(errors.New("upstream down"), 100, false); e.Code != 0 || e.Message != "upstream down" {
		t.Errorf("hop error %+v", e)
	}
	if e := keepError(errors.New("upstream down"), 100, true); e.Code != jsonrpc.CodeInternalError {
		t.Errorf("answer %+v", e)
	}
	up := fmt.Errorf("call: %w", &jsonrpc.Error{Code: -32099, Message: "failed", Data: json.RawMessage(`{"token":"t"}`)})
	if e := keepError(up, 100, false); e.Code != -32099 || e.Data.shown().Text != `{"token":"[redacted]"}` {
		t.Errorf("upstream error %+v %+v", e, e.Data)
	}
}

// The history keeps the newest rows, at most Options.Requests of them and
// about Options.MaxBytes of bodies, each cut at Options.MaxMessage.
func TestHistoryIsBounded(t *testing.T) {
	t.Run("rows", func(t *testing.T) {
		i := New(Options{Requests: 5})
		defer i.Close()
		for n := 1; n <= 12; n++ {
			call(i, n, []byte(`{"n":1}`))
		}
		rows := i.rows()
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if strings.Join(ids, ",") != "8,9,10,11,12" {
			t.Errorf("kept %v, want the newest 5", ids)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		const maxBytes, maxMessage = 1 << 20, 16 << 10
		i := New(Options{MaxBytes: maxBytes, MaxMessage: maxMessage})
		defer i.Close()
		big := []byte(`{"text":"` + strings.Repeat("x", 100<<10) + `"}`)
		for n := range 500 {
			call(i, n, big)
			i.mu.Lock()
			held, count := i.history.bytes, i.history.n
			i.mu.Unlock()
			if held > maxBytes {
				t.Fatalf("after %d calls the history holds %d bytes, over %d", n+1, held, maxBytes)
			}
			if count > DefaultRequests {
				t.Fatalf("%d rows", count)
			}
		}
		rows := i.rows()
		sum := 0
		for _, r := range rows {
			if p := r.Params.shown(); !p.Truncated || p.Size != len(big) || len(p.Text) != maxMessage {
				t.Fatalf("params kept as %d of %d bytes, truncated %v", len(p.Text), p.Size, p.Truncated)
			}
			sum += r.bytes
		}
		// Each row keeps four capped bodies: params and result, twice
		// (the call's and the hop's), and its method and id.
		if want := maxBytes / (4*maxMessage + len("tools/call") + len("499")); len(rows) != want || sum > maxBytes {
			t.Errorf("%d rows of %d bytes kept, want %d within %d", len(rows), sum, want, maxBytes)
		}
	})
	t.Run("messages of one call", func(t *testing.T) {
		i := New(Options{})
		defer i.Close()
		c := &traffic.Call{Method: "tools/call", Start: time.Now()}
		ctx := i.CallStarted(context.Background(), c)
		for range 1000 {
			i.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Method: "notifications/progress", Params: json.RawMessage(`{}`)})
		}
		i.CallEnded(ctx, c)
		r := i.rows()[0]
		if len(r.Messages) != maxMessages || r.Omitted != 1000-maxMessages {
			t.Errorf("%d messages kept, %d omitted", len(r.Messages), r.Omitted)
		}
	})
}

// Clear empties the history; a request in flight then ends without
// counting its bytes against a history it is no longer in.
func TestClear(t *testing.T) {
	i := New(Options{})
	defer i.Close()
	call(i, 1, []byte(`{}`))
	c := &traffic.Call{Method: "tools/call", Start: time.Now(), Params: json.RawMessage(`{"a":1}`)}
	ctx := i.CallStarted(context.Background(), c)
	i.Clear()
	c.Result = json.RawMessage(`{"big":"` + strings.Repeat("y", 1000) + `"}`)
	i.CallEnded(ctx, c)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.history.n != 0 || i.history.bytes != 0 {
		t.Errorf("after clear: %d rows, %d bytes", i.history.n, i.history.bytes)
	}
}

// BenchmarkRecordCall is what recording one small tools/call with its hop
// costs the request's goroutine, with no page watching.
func BenchmarkRecordCall(b *testing.B) {
	i := New(Options{})
	defer i.Close()
	params := []byte(`{"name":"f__echo","arguments":{"text":"x"}}`)
	n := 0
	for b.Loop() {
		n++
		call(i, n, params)
	}
}

// What a client writes that no list bounds (a method, an id, a tool's
// name) and what an upstream answers as an error's message are cut and
// counted against the history's bytes, like bodies: a client sending
// megabyte method names cannot make the history hold gigabytes.
func TestNamesAndErrorsAreBounded(t *testing.T) {
	const maxBytes, maxMessage = 1 << 20, 4 << 10
	i := New(Options{MaxBytes: maxBytes, MaxMessage: maxMessage})
	defer i.Close()
	huge := strings.Repeat("m", 1<<20)
	for n := range 50 {
		c := &traffic.Call{Method: huge, ID: json.RawMessage(`"` + huge + `"`), Start: time.Now()}
		ctx := i.CallStarted(context.Background(), c)
		i.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Method: huge})
		c.Target, c.Status = huge, traffic.StatusNotFound
		c.Err = &jsonrpc.Error{Code: -32601, Message: huge + " https://u:pw@h"}
		i.CallEnded(ctx, c)
		i.Message(context.Background(), &traffic.Message{Direction: traffic.FromClient, Method: huge})
		h := &traffic.Hop{Method: "tools/call", Start: time.Now()}
		hctx := i.HopStarted(ctx, h)
		h.Err = errors.New("dial https://user:hunter2@upstream.example: " + huge)
		i.HopEnded(hctx, h)
		i.mu.Lock()
		held := i.history.bytes
		i.mu.Unlock()
		if held > maxBytes {
			t.Fatalf("after %d calls the history holds %d bytes, over %d", n+1, held, maxBytes)
		}
	}
	total := 0
	for _, r := range i.rows() {
		b, _ := json.Marshal(r)
		total += len(b)
		if len(r.Method) > maxName+len("…") || len(r.ID) > maxName+len("…") || len(r.Target) > maxName+len("…") {
			t.Fatalf("kept a method of %d bytes, an id of %d, a target of %d", len(r.Method), len(r.ID), len(r.Target))
		}
		if r.Error != nil && len(r.Error.Message) > maxMessage+len("…") {
			t.Fatalf("kept an error message of %d bytes", len(r.Error.Message))
		}
	}
	if total > 2*maxBytes {
		t.Errorf("the history encodes to %d bytes, for a budget of %d", total, maxBytes)
	}
	// An error's text is redacted as bodies are.
	if e := keepError(errors.New("dial https://user:hunter2@upstream.example"), 100, false); strings.Contains(e.Message, "hunter2") {
		t.Errorf("a transport error kept its password: %q", e.Message)
	}
	if e := keepError(&jsonrpc.Error{Code: 1, Message: "bad GITHUB_TOKEN=ghp_123"}, 100, true); strings.Contains(e.Message, "ghp_123") {
		t.Errorf("an upstream's error kept its token: %q", e.Message)
	}
}
