package approve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The ways to put a call to a person, each a call.Asker: a grant that
// covers the call (Grant), the client's form elicitation (Elicit), the
// approval inbox (Wait), and a 2026-07-28 client's input_required round
// (the hub's, given to Ways). Ways.Ask chooses among them.

// Client is what the Askers need of the client session a call came on,
// beyond what call.Session says of it.
type Client interface {
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Credential is the HTTP credential the session came with, "" for none.
	Credential() string
	// Elicit sends the client elicitation/create with params and returns
	// its result.
	Elicit(ctx context.Context, params any) (json.RawMessage, error)
}

// ClientOf is the client session a call came on.
type ClientOf func(c *call.Call) Client

// Ways puts a call to a person. In order: a grant that covers the call
// lets it through at once; a 2026-07-28 client's input_required round
// (Round); the client's form elicitation, where it declared one; else,
// or where a clients: rule says approvals: inbox, the approval inbox
// (Inbox). Only an accept or an approval lets it through; a decline, a
// cancel, a denial or no answer in time deny.
type Ways struct {
	Config               *config.Config
	Client               ClientOf
	Grant                Grant
	Round, Elicit, Inbox call.Asker
}

// Ask puts c, which rule d leaves to a person, to one.
func (w Ways) Ask(ctx context.Context, c *call.Call, d policy.Decision) error {
	if w.Grant.Ask(ctx, c, d) == nil {
		return nil
	}
	if c.Modern {
		// A 2026-07-28 client is asked in an input_required answer, or,
		// when it cannot be, through the inbox (the round's).
		return w.Round.Ask(ctx, c, d)
	}
	if w.Client(c).CanElicit() && !InboxFor(w.Config, c.Session.ClientName()) { // the question is a form
		return w.Elicit.Ask(ctx, c, d)
	}
	return w.Inbox.Ask(ctx, c, d)
}

// PromptTimeout is how long a person has to answer a prompt rule's
// question (settings.prompt_timeout): the client's elicitation, the
// approval inbox, or the state of a 2026-07-28 client's input_required
// round.
func PromptTimeout(cfg *config.Config) time.Duration {
	if t := cfg.Settings.PromptTimeout; t > 0 {
		return t
	}
	return config.DefaultPromptTimeout
}

// InboxFor reports whether the prompt calls of the client named client go
// to the inbox even where it declared elicitation (a clients: rule with
// approvals: inbox).
func InboxFor(cfg *config.Config, client string) bool {
	_, rule := cfg.ClientRuleFor(client)
	return rule != nil && rule.Approvals == config.ApprovalsInbox
}

// errUncovered is Grant's answer for a call no grant covers.
var errUncovered = errors.New("no grant covers the call")

// Grant lets a call through at once when a grant of Inbox covers it,
// noting the grant in the call's notes (the audit record); it refuses any
// other, for Ways to ask in another way.
type Grant struct{ Inbox *Inbox }

// Ask lets c through when a grant covers it.
func (g Grant) Ask(_ context.Context, c *call.Call, _ policy.Decision) error {
	a := g.Inbox
	id, by, ok := a.use(c.Session.Caller(), c.Server.Group, c.Server.Name, c.Method, c.Name, c.Args)
	if !ok {
		return errUncovered
	}
	c.Approved(id, by)
	a.logger.Info("policy: call let through by a grant", "grant", id, "name", c.Name)
	return nil
}

// Elicit asks the client's user through form elicitation.
type Elicit struct {
	Config *config.Config
	Client ClientOf
}

// Ask puts c to the client's user; only an accept lets it through.
func (e Elicit) Ask(ctx context.Context, c *call.Call, d policy.Decision) error {
	msg := Message(e.Config, c.Method, c.Server.ID(), c.Name, c.Args, d)
	ctx, cancel := context.WithTimeout(ctx, PromptTimeout(e.Config))
	defer cancel()
	res, err := e.Client(c).Elicit(ctx, map[string]any{
		"message":         msg,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
	})
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return Accepted(res)
}

// Accepted is nil when res, a user's answer to a question put through
// elicitation (or an input_required round's), accepts; else why not.
func Accepted(res json.RawMessage) error {
	var answer struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(res, &answer); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	if answer.Action != "accept" {
		return fmt.Errorf("the user chose %s", answer.Action)
	}
	return nil
}

// maxQuestionArgs is how much of a call's arguments a question quotes.
const maxQuestionArgs = 500

// Message is the question a prompt rule puts to the user about a call
// of method to name on server (through the client's elicitation or an
// input_required round): its arguments with the config's secrets
// redacted, and where they are cut, their whole size, so that a harmless
// start does not pass for the whole.
func Message(cfg *config.Config, method, server, name string, args json.RawMessage, d policy.Decision) string {
	msg := fmt.Sprintf("dynamic-mcp: allow %s %q on %s?", method, name, server)
	if d.Description != "" {
		msg += " " + d.Description + "."
	}
	if len(args) > 0 {
		shown := string(cfg.RedactSecrets(args))
		if len(shown) > maxQuestionArgs {
			shown = strings.ToValidUTF8(shown[:maxQuestionArgs], "") + fmt.Sprintf("... (cut: %d bytes in all)", len(args))
		}
		msg += " Arguments: " + shown
	}
	return msg
}

// Wait puts a call in Inbox and waits for a person's answer, the
// client's cancel, or the prompt timeout.
type Wait struct {
	Inbox  *Inbox
	Config *config.Config
	Client ClientOf
}

// Ask waits for c's answer: nil lets the call go ahead.
func (w Wait) Ask(ctx context.Context, c *call.Call, d policy.Decision) error {
	a, cfg, sess := w.Inbox, w.Config, c.Session
	timeout := PromptTimeout(cfg)
	now := time.Now()
	p := &pendingCall{Pending: approval.Pending{ID: NewID(""), Time: now.UTC(), Method: c.Method, Tool: clipName(c.Name),
		Group: c.Server.Group, Server: c.Server.Name, Session: sess.ID(),
		Client: sess.ClientName(), ArgumentsSize: len(c.Args), Rule: d.Rule,
		Description: d.Description, Deadline: now.Add(timeout).UTC()},
		owner: sess.Caller(), cred: w.Client(c).Credential(), sessionless: sess.Sessionless(), name: c.Name, args: c.Args, answer: make(chan verdict, 1)}
	p.Arguments, p.Clipped = approvalArgs(cfg, c.Args)
	if a.shared != nil {
		p.Replica = a.replica
	}
	if err := a.add(p); err != nil {
		return err
	}
	if a.shared != nil {
		if err := a.sharedAdd(p); err != nil {
			a.withdraw(p)
			return err
		}
		defer a.sharedRemove(p.ID)
	}
	a.logger.Info("policy: call waits for approval", "id", p.ID, "name", c.Name, "session", sess.ID(), "timeout", timeout)
	a.notifyApproval(cfg, p.Pending)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var v verdict
	select {
	case v = <-p.answer:
	case <-timer.C:
		if a.withdraw(p) {
			return fmt.Errorf("no answer within %s", timeout)
		}
		v = <-p.answer
	case <-ctx.Done():
		if a.withdraw(p) {
			return fmt.Errorf("cancelled while waiting for approval: %w", context.Cause(ctx))
		}
		v = <-p.answer
	case <-a.stop: // the hub closes: nobody is left to approve it
		if a.withdraw(p) {
			return errors.New("the hub closed while the call waited for approval")
		}
		v = <-p.answer
	}
	if !v.ok {
		return fmt.Errorf("denied by %s", v.by)
	}
	c.Approved(v.grant, v.by)
	return nil
}
