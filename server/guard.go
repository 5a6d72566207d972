package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// codePolicyBlocked answers a call a policy rule blocked.
const codePolicyBlocked = -32001

// promptTimeout bounds how long the user has to answer an elicitation
// from a prompt rule before the call is denied.
const promptTimeout = 2 * time.Minute

// call is one tool call, resource read or prompt get on its way upstream.
type call struct {
	method string // policy.Method*
	server *upstream.Server
	name   string          // tool or prompt name as the server knows it, or the URI
	args   json.RawMessage // tool arguments
	params json.RawMessage // what is sent upstream
}

// forward applies the policy to c, sends it upstream when allowed, and
// writes the audit record. A failure of the hub or transport during a tool
// call is an isError result.
func (h *Hub) forward(ctx context.Context, c call) (json.RawMessage, error) {
	start := time.Now()
	rec := auditRecord{Time: start.UTC(), Session: sessionID(ctx), Group: c.server.Config.Group, Server: c.server.Config.Name,
		Method: c.method, Arguments: c.args}
	switch c.method {
	case policy.MethodToolsCall:
		rec.Tool = c.name
	case policy.MethodResourcesRead:
		rec.URI = c.name
	case policy.MethodPromptsGet:
		rec.Prompt = c.name
	}
	ctx, snap, release := h.acquire(ctx)
	defer release()
	if err := snap.audit.admit(); err != nil {
		return nil, err // audit.required and the trail fails: nothing unaudited
	}
	// The view routes only what the group does not hide; Decide checks
	// that again, with the very function `policy test` uses.
	d := snap.policy.Decide(policy.Request{Group: c.server.Config.Group, Server: c.server.Config.Name, Method: c.method, Name: c.name, Args: c.args})
	rec.Decision, rec.Rule = string(d.Action), d.Rule
	h.routed(ctx, c.server, c.name, d.Rule, string(d.Action))
	var res json.RawMessage
	err := h.decide(ctx, c, d)
	if err == nil {
		params, forget := h.mapProgress(ctx, c.params)
		defer forget()
		res, err = h.request(ctx, c.server, c.method, params, snap.cfg.CallTimeoutFor(c.server.Config))
		if err == nil && c.method == policy.MethodToolsCall && jsonrpc.Field(params, "task") != nil {
			res = h.adoptTask(ctx, c.server, res)
		}
		if err != nil && c.method == policy.MethodToolsCall && !isUpstreamError(err) && !errors.Is(err, context.Canceled) {
			h.logger.Warn("tool call failed", "upstream", c.server.Config.ID(), "tool", c.name, "err", err)
			rec.Outcome, rec.Error = "tool_error", err.Error()
			res, err = toolError(err.Error()), nil
		}
	}
	audit := snap.audit
	if audit == nil {
		return res, err
	}
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	switch {
	case rec.Outcome != "":
	case isBlocked(err):
		rec.Outcome, rec.Error = "blocked", err.Error()
	case err != nil:
		rec.Outcome, rec.Error = "error", err.Error()
	case isToolError(res):
		rec.Outcome = "tool_error"
	default:
		rec.Outcome = "ok"
	}
	if werr := audit.write(rec); werr != nil {
		return nil, werr // audit.required: no answer without its record
	}
	return res, err
}

// mapProgress gives the call's progress token, if it has one, a token of
// the hub's own in params, so that progress from upstream reaches this
// call's session with the token its client chose, and two clients that
// chose the same token never see each other's progress. It returns the
// params to send and a func that forgets the mapping.
func (h *Hub) mapProgress(ctx context.Context, params json.RawMessage) (json.RawMessage, func()) {
	meta := jsonrpc.Field(params, "_meta")
	token := jsonrpc.Field(meta, "progressToken")
	if len(token) == 0 {
		return params, func() {}
	}
	sess, ok := mcpserver.ClientSessionFromContext(ctx).(*session)
	if !ok {
		return params, func() {}
	}
	tok, forget := h.trackProgress(ctx, sess, bytes.Clone(token))
	q, _ := jsonrpc.Marshal(tok)
	if m, err := jsonrpc.SetField(meta, "progressToken", q); err == nil {
		if p, err := jsonrpc.SetField(params, "_meta", m); err == nil {
			params = p // the rest of _meta and params as the client sent them
		}
	}
	return params, forget
}

// decide turns a policy decision into nil (go ahead) or the error the
// client gets.
func (h *Hub) decide(ctx context.Context, c call, d policy.Decision) error {
	switch d.Action {
	case config.ActionAllow:
		return nil
	case config.ActionLog:
		h.logger.Info("policy: call logged", "rule", d.Rule, "upstream", c.server.Config.ID(), "method", c.method, "name", c.name)
		return nil
	case config.ActionPrompt:
		if err := h.ask(ctx, c, d); err != nil {
			h.logger.Info("policy: prompt not accepted, call denied", "rule", d.Rule, "name", c.name, "why", err)
			return blocked(d, err.Error())
		}
		return nil
	}
	return blocked(d, "")
}

func blocked(d policy.Decision, why string) *rpcError {
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
	return &rpcError{Code: codePolicyBlocked, Message: msg, Data: map[string]string{"rule": rule, "action": string(d.Action)}}
}

// ask puts the call to the user through the client's elicitation. Only an
// accept lets it through; a client that cannot elicit, a decline, a cancel
// or no answer in time all deny.
func (h *Hub) ask(ctx context.Context, c call, d policy.Decision) error {
	sess, ok := mcpserver.ClientSessionFromContext(ctx).(*session)
	if !ok {
		return errors.New("the client cannot be asked")
	}
	if sess.GetClientCapabilities().Elicitation == nil {
		return errors.New("the client does not support elicitation")
	}
	what := fmt.Sprintf("%s %q on %s", c.method, c.name, c.server.Config.ID())
	msg := fmt.Sprintf("dynamic-mcp: allow %s?", what)
	if d.Description != "" {
		msg += " " + d.Description + "."
	}
	if len(c.args) > 0 {
		args := string(c.args)
		if len(args) > 500 {
			args = args[:500] + "..."
		}
		msg += " Arguments: " + args
	}
	ctx, cancel := context.WithTimeout(ctx, promptTimeout)
	defer cancel()
	res, err := sess.request(ctx, "elicitation/create", map[string]any{
		"message":         msg,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
	})
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
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

// auditMiss records a tool call that named no tool the client can see.
func (h *Hub) auditMiss(ctx context.Context, name string, args json.RawMessage) {
	h.missed(ctx, name)
	rec := auditRecord{Time: time.Now().UTC(), Session: sessionID(ctx), Method: policy.MethodToolsCall, Tool: name,
		Decision: "not_found", Outcome: "not_found", Arguments: args}
	_, snap, release := h.acquire(ctx)
	defer release()
	_ = snap.audit.write(rec) // a loss is counted and logged by the trail
}

func sessionID(ctx context.Context) string {
	if s := mcpserver.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

func isUpstreamError(err error) bool {
	var ue *upstream.RPCError
	return errors.As(err, &ue)
}

func isBlocked(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && re.Code == codePolicyBlocked
}

func isToolError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}
