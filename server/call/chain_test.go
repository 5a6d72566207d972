package call_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	up "github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// trace is a stage that notes its name on the way in and out.
func trace(name string, log *[]string) call.Stage {
	return call.StageFunc(func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		*log = append(*log, name+">")
		res, err := next.Handle(ctx, c)
		*log = append(*log, "<"+name)
		return res, err
	})
}

func upstream(log *[]string) call.Handler {
	return call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
		*log = append(*log, "upstream "+c.Name)
		return json.RawMessage(`{"ok":true}`), nil
	})
}

func TestChainOrder(t *testing.T) {
	var log []string
	h := call.New(trace("audit", &log), trace("policy", &log), trace("rate", &log)).Then(upstream(&log))
	res, err := h.Handle(t.Context(), &call.Call{Route: call.Route{Name: "echo"}})
	if err != nil || string(res) != `{"ok":true}` {
		t.Fatalf("Run = %s, %v", res, err)
	}
	want := []string{"audit>", "policy>", "rate>", "upstream echo", "<rate", "<policy", "<audit"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q", log, want)
	}
	// Run again: the chain is built once and run per call.
	log = nil
	if _, err := h.Handle(t.Context(), &call.Call{Route: call.Route{Name: "again"}}); err != nil || len(log) != len(want) {
		t.Fatalf("second run: %q, %v", log, err)
	}
}

func TestChainShortCircuit(t *testing.T) {
	var log []string
	blocked := errors.New("blocked")
	deny := call.StageFunc(func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		c.Notes.Verdict = "deny"
		return nil, blocked
	})
	c := &call.Call{Route: call.Route{Name: "rm"}}
	_, err := call.New(trace("audit", &log), deny, trace("rate", &log)).Then(upstream(&log)).Handle(t.Context(), c)
	if !errors.Is(err, blocked) {
		t.Fatalf("err = %v, want the stage's", err)
	}
	if want := []string{"audit>", "<audit"}; !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q: nothing past the stage that answered", log, want)
	}
	if c.Notes.Verdict != "deny" {
		t.Fatalf("verdict %q: the outer stages read what the inner ones noted", c.Notes.Verdict)
	}
}

func TestChainEmpty(t *testing.T) {
	var log []string
	if _, err := call.New().Then(upstream(&log)).Handle(t.Context(), &call.Call{Route: call.Route{Name: "x"}}); err != nil || len(log) != 1 {
		t.Fatalf("empty chain: %q, %v", log, err)
	}
}

func TestAnswerWith(t *testing.T) {
	res, err := call.AnswerWith(&call.Answer{Result: json.RawMessage(`{"resultType":"input_required"}`)})
	if err != nil || string(res) != `{"resultType":"input_required"}` {
		t.Fatalf("an answer's result: %s, %v", res, err)
	}
	refused := jsonrpc.Errorf(-32602, "invalid params: state used")
	if _, err := call.AnswerWith(error(&call.Answer{Err: refused})); err != refused {
		t.Fatalf("an answer's error: %v", err)
	}
	other := errors.New("denied")
	if _, err := call.AnswerWith(other); err != other || call.IsAnswer(other) {
		t.Fatalf("another error passes as it is: %v", err)
	}
}

// A stage a config does not need (call.If false) is no stage of the
// chain: its calls do not pass it.
func TestChainLeavesOutNil(t *testing.T) {
	var log []string
	ch := call.New(call.If(false, trace("audit", &log)), trace("policy", &log), call.If(true, trace("rate", &log)))
	if ch.Len() != 2 {
		t.Fatalf("%d stages, want 2", ch.Len())
	}
	if _, err := ch.Then(upstream(&log)).Handle(t.Context(), &call.Call{Route: call.Route{Name: "echo"}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"policy>", "rate>", "upstream echo", "<rate", "<policy"}; !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q", log, want)
	}
}

// A stage for some calls (call.When) is passed by the others without
// being entered; the calls it is for go through it in its place.
func TestWhenPassesOthersBy(t *testing.T) {
	var log []string
	task := func(c *call.Call) bool { return c.Task }
	h := call.New(trace("outer", &log), call.When(task, trace("tasks", &log))).Then(upstream(&log))
	for _, tc := range []struct {
		task bool
		want []string
	}{
		{false, []string{"outer>", "upstream echo", "<outer"}},
		{true, []string{"outer>", "tasks>", "upstream echo", "<tasks", "<outer"}},
	} {
		log = nil
		if _, err := h.Handle(t.Context(), &call.Call{Route: call.Route{Name: "echo", Task: tc.task}}); err != nil || !slices.Equal(log, tc.want) {
			t.Errorf("task %v: %q, %v; want %q", tc.task, log, err, tc.want)
		}
	}
}

// A hop stage for some hops (call.HopIf) is passed by the others without
// being entered; the hops it is for go through it in its place.
func TestHopIfPassesOthersBy(t *testing.T) {
	var log []string
	stage := func(name string) call.HopStage {
		return hopStageFunc(func(ctx context.Context, h *call.Hop, next call.HopHandler) (json.RawMessage, up.ConnID, error) {
			log = append(log, name+">")
			res, conn, err := next.Hop(ctx, h)
			log = append(log, "<"+name)
			return res, conn, err
		})
	}
	end := call.HopFunc(func(ctx context.Context, h *call.Hop) (json.RawMessage, up.ConnID, error) {
		log = append(log, "send "+h.Method)
		return json.RawMessage(`{}`), 0, nil
	})
	hops := call.Hops(end, stage("outer"), call.HopIf(func(h *call.Hop) bool { return h.Method == "tools/call" }, stage("some")))
	for _, tc := range []struct {
		method string
		want   []string
	}{
		{"ping", []string{"outer>", "send ping", "<outer"}},
		{"tools/call", []string{"outer>", "some>", "send tools/call", "<some", "<outer"}},
	} {
		log = nil
		if _, _, err := hops.Hop(t.Context(), &call.Hop{Method: tc.method}); err != nil || !slices.Equal(log, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.method, log, err, tc.want)
		}
	}
}

type hopStageFunc func(ctx context.Context, h *call.Hop, next call.HopHandler) (json.RawMessage, up.ConnID, error)

func (f hopStageFunc) Hop(ctx context.Context, h *call.Hop, next call.HopHandler) (json.RawMessage, up.ConnID, error) {
	return f(ctx, h, next)
}
