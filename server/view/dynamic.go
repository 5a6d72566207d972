package view

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/search"
	"github.com/dynamic-mcp/dynamic-mcp/server/validateargs"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// The meta-tools of dynamic mode; names, argument keys and descriptions
// follow the original dynamic-mcp so that prompts written for it still work.
const (
	GetToolsName  = "get_dynamic_tools"
	CallToolName  = "call_dynamic_tool"
	getToolsIntro = "dynamic-mcp manages multiple MCP servers as organized groups, providing only the necessary group's tool descriptions to the LLM on demand instead of overwhelming it with all tool descriptions at once.\n\n" +
		"Use this tool to retrieve available tools in a specific group, then use call_dynamic_tool to execute them.\n\n" +
		"Available groups:\n"
	callToolDescription = "Execute a tool from a specific MCP group. Proxies the call to the appropriate upstream MCP server.\n\n" +
		"Use get_dynamic_tools first to discover available tools and their input schemas in the specified group, then use this tool to execute them.\n\n" +
		"Example usage:\n" +
		"  call_dynamic_tool(group=\"playwright\", name=\"browser_navigate\", args={\"url\": \"https://example.com\"})\n" +
		"  → Executes the browser_navigate tool from the playwright group with the specified arguments"
)

// metaTools are the tools the client sees in dynamic mode: the two of
// the original, and search_dynamic_tools when withSearch. The groups
// appear in config order, a group still starting as if it were ready (a
// call for it waits for it), so the text is complete from the first list
// and only changes when a group fails or comes back, which keeps the
// client's prompt cache warm.
func metaTools(groups []*GroupView, withSearch bool) []json.RawMessage {
	enum, listed, down := groupList(groups)
	var b strings.Builder
	b.WriteString(getToolsIntro)
	b.WriteString(listed)
	if len(down) > 0 {
		b.WriteString("\nUnavailable groups:\n")
		b.WriteString(strings.Join(down, "\n"))
	}
	get := map[string]any{
		"name":        GetToolsName,
		"description": strings.TrimRight(b.String(), "\n"),
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"group": map[string]any{"type": "string", "description": "The name of the MCP group to get tools from", "enum": enum},
			},
			"required": []string{"group"},
		},
	}
	call := map[string]any{
		"name":        CallToolName,
		"description": callToolDescription,
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"group": map[string]any{"type": "string", "description": "The name of the MCP group containing the tool", "enum": enum},
				"name":  map[string]any{"type": "string", "description": "The name of the tool to execute"},
				"args":  map[string]any{"type": "object", "description": "Arguments to pass to the tool", "additionalProperties": true},
			},
			"required": []string{"group", "name"},
		},
	}
	get["outputSchema"] = answerSchema("group", "The group asked for", map[string]any{
		"instructions": map[string]any{"type": "string", "description": "The group's servers' own instructions on how to use their tools, whole"},
	})
	g, _ := jsonrpc.Marshal(get)
	c, _ := jsonrpc.Marshal(call)
	if withSearch {
		return []json.RawMessage{g, c, searchTool(enum, listed)}
	}
	return []json.RawMessage{g, c}
}

// groupList is what the meta-tools say of the groups: the names a call
// may give (ready or starting, in config order), their lines "- name:
// description" ("(none yet)" for none), and the lines of the groups that
// are unavailable, with the reason.
func groupList(groups []*GroupView) (enum []string, listed string, down []string) {
	var b strings.Builder
	enum = []string{}
	for _, g := range groups {
		if g.State == upstream.StateReady || g.State == upstream.StateStarting {
			enum = append(enum, g.Name)
			fmt.Fprintf(&b, "- %s: %s\n", g.Name, g.Description)
		} else {
			down = append(down, fmt.Sprintf("- %s: %s (unavailable: %s)", g.Name, g.Description, g.Reason))
		}
	}
	if len(enum) == 0 {
		b.WriteString("(none yet)\n")
	}
	return enum, b.String(), down
}

// DynamicArgs are the arguments of the meta-tools.
type DynamicArgs struct {
	Group string          `json:"group"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args"`
	// Arguments is the key of a plain tools/call, which a model may give
	// call_dynamic_tool instead of args: answered with an error that says
	// so, never passed on as no arguments.
	Arguments json.RawMessage `json:"arguments"`
	// search_dynamic_tools' own arguments, read by searchDynamicTools
	// alone: another meta-tool's call that happens to carry them (of any
	// type) is not refused for them.
	Query json.RawMessage `json:"query"`
	Limit json.RawMessage `json:"limit"`
}

// LookupGroup finds a group the client may use, or says why it cannot.
func (v *View) LookupGroup(name string) (*GroupView, string) {
	if name == "" {
		return nil, "Missing required argument: group"
	}
	g, ok := v.GroupIndex[name]
	if !ok {
		var names []string
		for _, g := range v.Groups {
			names = append(names, g.Name)
		}
		return nil, fmt.Sprintf("Unknown group: %s (groups: %s)", clip.Echo(name), strings.Join(names, ", "))
	}
	if g.State != upstream.StateReady {
		return nil, fmt.Sprintf("Group %s is unavailable: %s", name, g.Reason)
	}
	return g, ""
}

// GetDynamicTools answers get_dynamic_tools: an object with the group's
// name, its servers' instructions (when it has any and config lets them
// through) and its tools (name, description, input schema), spliced from
// the upstreams' own bytes (see search.AppendEntries, which
// search_dynamic_tools answers with too).
func (v *View) GetDynamicTools(args DynamicArgs) json.RawMessage {
	g, problem := v.LookupGroup(args.Group)
	if g == nil {
		return call.ToolError(problem)
	}
	entries := make([]search.Entry, len(g.Tools))
	for i, raw := range g.Tools {
		entries[i] = search.Entry{Tool: raw}
	}
	name, _ := jsonrpc.Marshal(g.Name)
	obj := append([]byte(`{"group":`), name...)
	if g.Instructions != "" {
		text, _ := jsonrpc.Marshal(g.Instructions)
		obj = append(append(obj, `,"instructions":`...), text...)
	}
	obj, err := search.AppendEntries(append(obj, `,"tools":`...), entries)
	if err != nil {
		return call.ToolError("dynamic-mcp: cannot list the tools of " + g.Name + ": " + err.Error())
	}
	return objectResult(append(obj, '}'))
}

// objectResult is the CallToolResult of a meta-tool that answers the JSON
// object obj: obj as structuredContent, which the meta-tool's
// outputSchema describes, and as the text, which a client without
// structured content gives the model (MCP 2025-06-18, server/tools,
// "Structured Content": a tool that returns structured content SHOULD
// also return it serialized in a text block). An object and not a bare
// array: Gemini CLI stores a text that parses as JSON as the
// structuredContent of a result that has none, which the TypeScript SDK
// refuses unless it is an object.
func objectResult(obj []byte) json.RawMessage {
	q, _ := jsonrpc.Marshal(string(obj))
	b := make([]byte, 0, len(q)+len(obj)+64)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, q...)
	b = append(b, `}],"structuredContent":`...)
	b = append(b, obj...)
	return append(b, '}')
}

// answerSchema is the outputSchema of a meta-tool that answers an object
// with key (a string, described by about), tools (the entries
// search.AppendEntries writes) and the optional more. The entries' input
// schemas are left unconstrained: they are the servers' own, whatever
// they wrote.
func answerSchema(key, about string, more map[string]any) map[string]any {
	props := map[string]any{
		key: map[string]any{"type": "string", "description": about},
		"tools": map[string]any{"type": "array", "items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"group":       map[string]any{"type": "string"},
				"name":        map[string]any{"type": "string"},
				"description": map[string]any{"type": "string"},
				"inputSchema": map[string]any{"description": "The tool's input schema, as its server wrote it"},
			},
			"required": []string{"name", "inputSchema"},
		}},
	}
	maps.Copy(props, more)
	return map[string]any{"type": "object", "properties": props, "required": []string{key, "tools"}}
}

// given says a meta-tool's argument is there: present and not null.
func given(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// DynamicCall is a call_dynamic_tool call as the view resolves it: the
// route of the tool it names, and the arguments and params to send that
// tool's server; or, when Answer is set, the call's answer as it stands.
type DynamicCall struct {
	Route  Route
	Args   json.RawMessage
	Params jsonrpc.Object
	Schema json.RawMessage // the tool's inputSchema, nil if none
	// Answer, when not nil, is the tool error to answer with at once.
	Answer json.RawMessage
	// Missed says the group has no tool of the name asked for (Answer
	// says so): the hub notes a miss, as for a tool that does not exist.
	Missed bool
}

// CallDynamicTool resolves call_dynamic_tool, whose upstream result is
// answered unchanged. The params sent upstream are the group tool's name,
// the client's args byte for byte, and the call's meta (_meta) and task.
func (v *View) CallDynamicTool(args DynamicArgs, meta, task []byte) DynamicCall {
	g, problem := v.LookupGroup(args.Group)
	if g == nil {
		return DynamicCall{Answer: call.ToolError(problem)}
	}
	if args.Name == "" {
		return DynamicCall{Answer: call.ToolError("Missing required argument: name")}
	}
	r, ok := g.ToolRoutes[args.Name]
	if !ok {
		return DynamicCall{Answer: call.ToolError(g.toolNotFound(args.Name)), Missed: true}
	}
	schema := r.Tool.InputSchema
	if given(args.Arguments) {
		msg := "call_dynamic_tool takes the tool's arguments in args, not arguments: call again with args"
		if given(args.Args) {
			msg = "call_dynamic_tool was given both args and arguments: give the tool's arguments in args only"
		}
		return DynamicCall{Answer: validateargs.Error(msg+".", nil, schema)}
	}
	arguments := args.Args
	if len(arguments) > 0 && string(arguments) != "null" && arguments[0] != '{' {
		return DynamicCall{Answer: call.ToolError("args must be an object")} // as before the schema check, which would say the same at more length
	}
	if len(arguments) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage("{}")
	}
	// In the order encoding/json would write them; every value is checked
	// JSON already: read from the client's params, or the hub's encoding.
	b := make([]byte, 0, len(meta)+len(arguments)+len(r.Name)+len(task)+50)
	b = append(b, '{')
	if len(meta) > 0 {
		b = append(append(b, `"_meta":`...), meta...)
		b = append(b, ',')
	}
	b = append(append(b, `"arguments":`...), arguments...)
	b = jsonrpc.AppendString(append(b, `,"name":`...), r.Name)
	if len(task) > 0 { // a task-augmented call runs as a task upstream
		b = append(append(b, `,"task":`...), task...)
	}
	params, err := jsonrpc.ScanObject(append(b, '}'))
	if err != nil {
		return DynamicCall{Answer: call.ToolError("invalid arguments: " + err.Error())}
	}
	return DynamicCall{Route: r, Args: arguments, Params: params, Schema: schema}
}
