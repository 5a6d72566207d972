package observe

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// The observed call learns where the call goes and what was decided
// before the rest of the chain runs; a call no one watches passes as it
// is.
func TestStageNotesRoute(t *testing.T) {
	o := &traffic.Call{}
	var seen traffic.Call
	next := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) { seen = *o; return nil, nil })
	c := &call.Call{Origin: call.Origin{Observed: o}, Route: call.Route{Server: &config.Server{Group: "g", Name: "s"}, Name: "rm"}}
	c.Decision.Rule, c.Notes.Verdict = "no-rm", "deny"
	if _, err := (Stage{}).Handle(t.Context(), c, next); err != nil {
		t.Fatal(err)
	}
	if seen.Group != "g" || seen.Server != "s" || seen.Target != "rm" || seen.Rule != "no-rm" || seen.Action != "deny" {
		t.Fatalf("observed %+v", seen)
	}
	c.Observed = nil
	if _, err := (Stage{}).Handle(t.Context(), c, next); err != nil {
		t.Fatal(err)
	}
}
