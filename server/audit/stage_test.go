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
	var kept *Record
	s := Stage{Trail: newTrail(nil, config.Audit{}, testLogger(), &Stats{}), Keep: func(c *call.Call, r *Record) { kept = r }}
	c := calltest.ToolCall("rm")
	c.Args = json.RawMessage(`{"path":"/"}`)
	if _, err := s.Handle(t.Context(), c, decide); !errors.Is(err, denied) {
		t.Fatalf("err %v, want the stage's", err)
	}
	if kept == nil || kept.Session != "s1" || kept.Group != "g" || kept.Server != "s" || kept.Tool != "rm" ||
		kept.Decision != "deny" || kept.Rule != "no-rm" || string(kept.Arguments) != `{"path":"/"}` || kept.Outcome != "" {
		t.Fatalf("kept %+v", kept)
	}

	// Off: nothing is kept.
	kept = nil
	if _, err := (Stage{Keep: s.Keep}).Handle(t.Context(), c, decide); !errors.Is(err, denied) || kept != nil {
		t.Fatalf("off: err %v, kept %+v", err, kept)
	}

	// Required and failing: refused, unseen by the rest of the chain.
	failing := Closed(&Stats{}, true)
	reached := false
	next := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) { reached = true; return nil, nil })
	if _, err := (Stage{Trail: failing, Keep: s.Keep}).Handle(t.Context(), c, next); err != ErrUnavailable || reached || kept != nil {
		t.Fatalf("required, failing: err %v, next reached %v, kept %+v", err, reached, kept)
	}
}
