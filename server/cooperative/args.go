package cooperative

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Target is the call an agent means: a tool by the name it calls it (in
// dynamic mode with its group), with the arguments it means to pass, or a
// resource read by its URI.
type Target struct {
	Tool      string
	Group     string
	Arguments json.RawMessage // nil when not given
	URI       string
}

// String names t for an answer.
func (t Target) String() string {
	switch {
	case t.URI != "":
		return "reading " + t.URI
	case t.Group != "":
		return "tool " + t.Group + "/" + t.Tool
	}
	return "tool " + t.Tool
}

// input is every key the four tools take; each reads its own.
type input struct {
	Description string          `json:"description"`
	ActionType  string          `json:"action_type"`
	Target      string          `json:"target"`
	Reason      string          `json:"reason"`
	Tool        string          `json:"tool"`
	Group       string          `json:"group"`
	Arguments   json.RawMessage `json:"arguments"`

	Resource         string `json:"resource"`
	Operation        string `json:"operation"`
	Justification    string `json:"justification"`
	TimeoutSeconds   *int   `json:"timeout_seconds"`
	Scope            string `json:"scope"`
	ExpiresInSeconds int    `json:"expires_in_seconds"`

	Result  string          `json:"result"`
	Details json.RawMessage `json:"details"`

	ToolName string `json:"tool_name"`
}

// problem is a call's arguments that cannot be used: answered as a tool
// error the model reads, as the meta-tools answer theirs.
type problem string

func (p problem) Error() string { return string(p) }

// read decodes args (absent or null: none), and checks the keys required
// are given and the enumerated ones take a value of their enum.
func read(args json.RawMessage, required ...string) (input, error) {
	var in input
	if len(args) > 0 && string(args) != "null" {
		if args[0] != '{' {
			return in, problem("arguments must be an object")
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return in, problem("invalid arguments: " + err.Error())
		}
	}
	given := map[string]string{"description": in.Description, "action_type": in.ActionType, "target": in.Target,
		"resource": in.Resource, "operation": in.Operation, "justification": in.Justification, "result": in.Result}
	for _, k := range required {
		if strings.TrimSpace(given[k]) == "" {
			return in, problem("Missing required argument: " + k)
		}
	}
	for key, e := range map[string]struct {
		v    string
		enum []string
	}{
		"action_type": {in.ActionType, actionTypes},
		"operation":   {in.Operation, []string{"read", "write", "execute", "delete", "connect"}},
		"result":      {in.Result, []string{"success", "failure", "partial"}},
		"scope":       {in.Scope, []string{ScopeSession, ScopeOnce}},
	} {
		if e.v != "" && !slices.Contains(e.enum, e.v) {
			return in, problem(fmt.Sprintf("%s must be one of %s", key, strings.Join(e.enum, ", ")))
		}
	}
	if len(in.Arguments) > 0 && string(in.Arguments) != "null" && in.Arguments[0] != '{' {
		return in, problem("arguments must be an object: the arguments of the call you mean")
	}
	if len(in.Details) > 0 && string(in.Details) != "null" && in.Details[0] != '{' {
		return in, problem("details must be an object")
	}
	return in, nil
}

// target is the call in means: its tool, or for a resource read with no
// tool its URI (checkIntent's target, requestPermission's resource);
// which names the key the URI is read from.
func (in input) target(uri string) (Target, error) {
	if in.Tool != "" {
		args := in.Arguments
		if string(args) == "null" {
			args = nil
		}
		return Target{Tool: in.Tool, Group: in.Group, Arguments: args}, nil
	}
	if uri != "" {
		return Target{URI: uri}, nil
	}
	return Target{}, problem("name the call you mean: tool (and group in dynamic mode) with its arguments, or for a resource read " +
		"action_type resource_access with its URI: this hub's policy decides tool calls and resource reads, and a description alone names neither")
}
