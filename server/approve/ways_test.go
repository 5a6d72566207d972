package approve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// eliciting is a client session that declared form elicitation.
type eliciting struct{ fakeSession }

func (eliciting) CanElicit() bool { return true }

// Ways asks in one way per call: a grant that covers it lets it through
// without asking; a 2026-07-28 call goes to the round; a client that
// declared elicitation is asked through it, unless a clients: rule sends
// it to the inbox; any other waits in the inbox.
func TestWaysChooses(t *testing.T) {
	cfg, err := config.Parse("test.yaml", strings.NewReader("groups:\n  g:\n    description: g\n    command: x\nclients:\n  - {match: marked, approvals: inbox}\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := New(Options{Logger: testLogger()})
	var asked string
	way := func(name string) call.Asker {
		return call.AskerFunc(func(context.Context, *call.Call, policy.Decision) error { asked = name; return nil })
	}
	for _, tc := range []struct {
		name    string
		session call.Session
		client  Client
		modern  bool
		want    string
	}{
		{"an older client without elicitation", fakeSession{}, fakeSession{}, false, "inbox"},
		{"an older client with elicitation", named{name: "claude"}, eliciting{}, false, "elicit"},
		{"a client a clients: rule sends to the inbox", named{name: "marked"}, eliciting{}, false, "inbox"},
		{"a 2026-07-28 client", fakeSession{}, eliciting{}, true, "round"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = ""
			w := Ways{Config: cfg, Client: func(*call.Call) Client { return tc.client }, Grant: Grant{Inbox: in},
				Round: way("round"), Elicit: way("elicit"), Inbox: way("inbox")}
			c := &call.Call{Origin: call.Origin{Session: tc.session}, Asked: call.Asked{Method: "tools/call", Modern: tc.modern},
				Route: call.Route{Server: &config.Server{Group: "g", Name: "f"}, Name: "echo"}}
			if err := w.Ask(t.Context(), c, policy.Decision{}); err != nil || asked != tc.want {
				t.Errorf("asked %q (%v), want %q", asked, err, tc.want)
			}
		})
	}
	// A grant that covers the call lets it through without asking, and
	// says so in its notes.
	in.Keep(approval.Grant{ID: "g-1", ApprovedBy: "ui", Method: "tools/call", Tool: "echo", Group: "g", Server: "f"}, nil, "")
	asked = ""
	w := Ways{Config: cfg, Client: func(*call.Call) Client { return fakeSession{} }, Grant: Grant{Inbox: in},
		Round: way("round"), Elicit: way("elicit"), Inbox: way("inbox")}
	c := &call.Call{Origin: call.Origin{Session: fakeSession{}}, Asked: call.Asked{Method: "tools/call"},
		Route: call.Route{Server: &config.Server{Group: "g", Name: "f"}, Name: "echo", Args: json.RawMessage(`{}`)}}
	if err := w.Ask(t.Context(), c, policy.Decision{}); err != nil || asked != "" || c.Notes.Grant != "g-1" || c.Notes.ApprovedBy != "ui" {
		t.Errorf("a granted call: asked %q (%v), notes %+v", asked, err, c.Notes)
	}
}

// named is a session of a client named so.
type named struct {
	fakeSession
	name string
}

func (n named) ClientName() string { return n.name }
