// Package gate is the policy's stages of the call chain, beside the pure
// rules of package policy: Decide asks the rules about a call, Enforce
// acts on their decision (allow, log, deny, or put the call to a person
// through an Asker). The rate limit stage runs between the two, so that
// a call over its rate is asked about, or denied, once.
package gate

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Decide notes the policy's decision about a call (Call.Decision, and the
// verdict its observers are told). The view routes only what the group
// does not hide; Decide checks that again, with the very function
// `policy test` uses. It is built per config snapshot (NewDecide).
type Decide struct {
	Policy *policy.Policy
	// fixed are the decisions that read nothing of a call, by group
	// (policy.Fixed: a group without filters or rules), worked out once
	// per snapshot: a call to such a group is not asked about again.
	fixed map[string]policy.Decision
}

// NewDecide is the stage of a snapshot's policy p.
func NewDecide(p *policy.Policy) Decide { return Decide{Policy: p, fixed: p.Fixed()} }

// Handle decides c and passes it on.
func (s Decide) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	d, fixed := s.fixed[c.Server.Group]
	if !fixed {
		d = s.Policy.Decide(policy.Request{Group: c.Server.Group, Server: c.Server.Name, Method: c.Method, Name: c.Name, Args: c.Args})
	}
	c.Decision = d
	c.Notes.Verdict = string(c.Decision.Action)
	return next.Handle(ctx, c)
}

// Enforce turns the call's decision into the call going ahead or the
// answer the client gets: allow and log go ahead; prompt puts the call to
// a person (Asker), whose accept alone lets it through; anything else is
// blocked with -32001.
type Enforce struct {
	Asker  call.Asker
	Logger *slog.Logger
}

// Handle enforces c's decision.
func (s *Enforce) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if err := s.decide(ctx, c); err != nil {
		return call.AnswerWith(err) // an input_required answer that asks the user is no error
	}
	return next.Handle(ctx, c)
}

func (s *Enforce) decide(ctx context.Context, c *call.Call) error {
	d := c.Decision
	switch d.Action {
	case config.ActionAllow:
		return nil
	case config.ActionLog:
		s.Logger.Info("policy: call logged", "rule", d.Rule, "upstream", c.Server.ID(), "method", c.Method, "name", c.Name)
		return nil
	case config.ActionPrompt:
		if err := s.Asker.Ask(ctx, c, d); err != nil {
			if call.IsAnswer(err) {
				return err
			}
			s.Logger.Info("policy: prompt not accepted, call denied", "rule", d.Rule, "name", c.Name, "why", err)
			return Blocked(d, err.Error())
		}
		return nil
	}
	return Blocked(d, "")
}

// Blocked is the error a call d blocks is answered with: -32001, the
// rule's description (or its name) and why, data {rule, action}.
func Blocked(d policy.Decision, why string) *jsonrpc.Error {
	rule := d.Rule
	if rule == "" {
		rule = "policy_default"
	}
	msg := d.Description
	if msg == "" {
		msg = "Blocked by policy rule " + rule
	}
	if why != "" {
		msg += " (" + why + ")"
	}
	return &jsonrpc.Error{Code: call.CodeBlocked, Message: msg, Data: map[string]string{"rule": rule, "action": string(d.Action)}}
}
