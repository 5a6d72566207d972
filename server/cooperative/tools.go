package cooperative

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// The tools' names, as the seed names them, so that an agent written for
// ClawDefender calls them unchanged. The hub's own tools win a clash: an
// upstream tool the client would see under one of these names (a group
// with prefix: false) is left out of the view, and the view says why.
const (
	CheckIntent       = "checkIntent"
	RequestPermission = "requestPermission"
	ReportAction      = "reportAction"
	GetPolicy         = "getPolicy"
)

// Names are the tools' names, in the order tools/list shows them.
var Names = []string{CheckIntent, RequestPermission, ReportAction, GetPolicy}

// IsTool reports whether name is one of the cooperative tools.
func IsTool(name string) bool {
	switch name {
	case CheckIntent, RequestPermission, ReportAction, GetPolicy:
		return true
	}
	return false
}

// CodeRateLimited answers a call over its tool's rate limit, as the seed
// answers it.
const CodeRateLimited = -32000

// RateScope names the counters of the tools' rate limits among the hub's
// (whose rule groups are config group names): it is no valid group name,
// so no rule of the config shares them.
const RateScope = "(cooperative)"

// limits are the seed's rate limits, per caller: getPolicy has none. Per
// is the session's; the hub counts all sessions of a caller its face
// knows as one (see the server's coopHost.Take).
var limits = map[string]*config.RateLimit{
	CheckIntent:       {Calls: 100, Period: time.Minute, Text: "100/minute", Per: config.RatePerSession},
	RequestPermission: {Calls: 10, Period: time.Minute, Text: "10/minute", Per: config.RatePerSession},
	ReportAction:      {Calls: 1000, Period: time.Minute, Text: "1000/minute", Per: config.RatePerSession},
}

// Limit is the rate limit of the tool name per caller, nil for none.
func Limit(name string) *config.RateLimit { return limits[name] }

// actionTypes are the seed's kinds of action.
var actionTypes = []string{"file_read", "file_write", "file_delete", "shell_execute", "network_request", "resource_access", "other"}

// Definitions are the tools' definitions for tools/list, built once.
var Definitions = sync.OnceValue(func() []json.RawMessage {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	kind := map[string]any{"type": "string", "enum": actionTypes}
	// The keys of the hub's own, beside the seed's: the exact call meant.
	call := func(props map[string]any) map[string]any {
		props["tool"] = str("The tool you intend to call, by the name you call it (as tools/list shows it; in dynamic mode with group, the name get_dynamic_tools lists)")
		props["group"] = str("In dynamic mode: the group of tool")
		props["arguments"] = map[string]any{"type": "object", "description": "The arguments you intend to call tool with", "additionalProperties": true}
		return props
	}
	defs := []map[string]any{{
		"name":        CheckIntent,
		"description": "Check whether a planned action is allowed by the hub's policy, before you take it. Name the tool and its arguments (tool, arguments; and group in dynamic mode), or for a resource read its URI as target with action_type resource_access: the answer is the decision a real call gets now.",
		"inputSchema": map[string]any{"type": "object", "properties": call(map[string]any{
			"description": str("Human-readable description of what you intend to do"),
			"action_type": kind,
			"target":      str("Target resource: file path, URL, command, etc."),
			"reason":      str("Optional justification"),
		}), "required": []string{"description", "action_type", "target"}},
	}, {
		"name":        RequestPermission,
		"description": "Request explicit approval for an operation that the hub's policy leaves to a person. Name the tool and its arguments as for checkIntent; a person is asked as for any call that needs approval, and a yes leaves a grant for this session (scope once: for one call) that lets the call through.",
		"inputSchema": map[string]any{"type": "object", "properties": call(map[string]any{
			"resource":           str("Resource to access (exact path, no wildcards)"),
			"operation":          map[string]any{"type": "string", "enum": []string{"read", "write", "execute", "delete", "connect"}},
			"justification":      str("Why you need this access"),
			"timeout_seconds":    map[string]any{"type": "integer", "default": defaultTimeoutSeconds, "description": "How long to wait for the person's answer, at most the hub's prompt_timeout"},
			"scope":              map[string]any{"type": "string", "enum": []string{ScopeSession, ScopeOnce}, "default": ScopeSession, "description": "session: every call of tool with these arguments in this session; once: the next such call"},
			"expires_in_seconds": map[string]any{"type": "integer", "minimum": 1, "description": "End the grant this long after it is made (default: with the session)"},
		}), "required": []string{"resource", "operation", "justification"}},
	}, {
		"name":        ReportAction,
		"description": "Report an action that has already been performed, for the hub's audit trail. The record is marked as the agent's own report.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"description": str("What happened"),
			"action_type": kind,
			"target":      str("Target resource"),
			"result":      map[string]any{"type": "string", "enum": []string{"success", "failure", "partial"}},
			"details":     map[string]any{"type": "object", "description": "Additional details"},
		}, "required": []string{"description", "action_type", "target", "result"}},
	}, {
		"name":        GetPolicy,
		"description": "Query the hub's policy rules that apply to you: all of them, or those for a tool, a resource or a kind of action.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"resource":    str("Filter by resource path or URI"),
			"action_type": kind,
			"tool_name":   str("Filter by tool name, as you call it"),
			"group":       str("In dynamic mode: the group of tool_name"),
		}},
	}}
	out := make([]json.RawMessage, len(defs))
	for i, d := range defs {
		out[i], _ = jsonrpc.Marshal(d)
	}
	return out
})
