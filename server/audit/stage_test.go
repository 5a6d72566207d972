package audit

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/call/calltest"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The stage builds the record from what the stages after it decided,
// once they have, and hands it on unwritten; with audit.required a
// failing trail refuses the call before any stage sees it.
func TestStageRecordsDecision(t *testing.T) {
	denied := errors.New("denied")
	decide := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
		c.Decision.Rule = "no-rm"
		c.Notes.Verdict = "deny"
		return nil, denied
	})
	s := Stage{Trail: newTrail(nil, config.Audit{}, testLogger(), &Stats{})}
	c := calltest.ToolCall("rm")
	c.Args = json.RawMessage(`{"path":"/"}`)
	if _, err := s.Handle(t.Context(), c, decide); !errors.Is(err, denied) {
		t.Fatalf("err %v, want the stage's", err)
	}
	kept := c.Audit
	if kept == nil || kept.Session != "s1" || kept.Group != "g" || kept.Server != "s" || kept.Tool != "rm" ||
		kept.Decision != "deny" || kept.Rule != "no-rm" || string(kept.Arguments) != `{"path":"/"}` || kept.Outcome != "" {
		t.Fatalf("kept %+v", kept)
	}

	// Off: nothing is kept.
	c.Audit = nil
	if _, err := (Stage{}).Handle(t.Context(), c, decide); !errors.Is(err, denied) || c.Audit != nil {
		t.Fatalf("off: err %v, kept %+v", err, c.Audit)
	}

	// Required and failing: refused, unseen by the rest of the chain.
	failing := Closed(&Stats{}, true)
	reached := false
	next := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) { reached = true; return nil, nil })
	if _, err := (Stage{Trail: failing}).Handle(t.Context(), c, next); err != ErrUnavailable || reached || c.Audit != nil {
		t.Fatalf("required, failing: err %v, next reached %v, kept %+v", err, reached, c.Audit)
	}
}

// The request stage writes the record kept for the request once it is
// answered, completed with the outcome it is handed; with audit.required
// a record the trail cannot take fails the request.
func TestWriterWritesOnceAnswered(t *testing.T) {
	answer := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
		c.Failure = "upstream down"
		return json.RawMessage(`{"isError":true}`), nil
	})
	outcome := func(ctx context.Context, c *call.Call, res json.RawMessage, err error) string {
		if string(res) != `{"isError":true}` || err != nil {
			t.Errorf("outcome handed %s, %v: not the answer", res, err)
		}
		return "tool_error"
	}
	c := calltest.ToolCall("rm")

	// No record kept: nothing written, the answer as it is.
	stats := &Stats{}
	if res, err := (Writer{Trail: Closed(stats, false), Outcome: outcome}).Handle(t.Context(), c, answer); err != nil || res == nil || stats.Lost() != 0 {
		t.Fatalf("no record: %s, %v, lost %d", res, err, stats.Lost())
	}

	// A record: completed with the outcome, and written (a closed trail
	// counts it lost).
	rec := &Record{Method: "tools/call", Tool: "rm"}
	c.Audit = rec
	if res, err := (Writer{Trail: Closed(stats, false), Outcome: outcome}).Handle(t.Context(), c, answer); err != nil || res == nil || stats.Lost() != 1 {
		t.Fatalf("record: %s, %v, lost %d", res, err, stats.Lost())
	}
	if rec.Outcome != "tool_error" || rec.Error != "upstream down" {
		t.Fatalf("record not completed: %+v", rec)
	}

	// Required: no answer without its record.
	if res, err := (Writer{Trail: Closed(stats, true), Outcome: outcome}).Handle(t.Context(), c, answer); err == nil || res != nil {
		t.Fatalf("required, not written: %s, %v", res, err)
	}
}
