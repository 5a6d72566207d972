package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// Attribute keys of the MCP semantic conventions, then the hub's own.
const (
	attrMethod       = "mcp.method.name"
	attrSession      = "mcp.session.id"
	attrProtocol     = "mcp.protocol.version"
	attrResourceURI  = "mcp.resource.uri"
	attrTool         = "gen_ai.tool.name"
	attrPrompt       = "gen_ai.prompt.name"
	attrOperation    = "gen_ai.operation.name"
	attrRequestID    = "jsonrpc.request.id"
	attrStatusCode   = "rpc.response.status_code"
	attrErrorType    = "error.type"
	attrTransport    = "network.transport"
	attrProtocolName = "network.protocol.name"
	attrUser         = "user.id" // the caller's key: jwt:SUBJECT, token:NAME

	attrGroup  = "dynamic_mcp.group"
	attrServer = "dynamic_mcp.server"
	attrRule   = "dynamic_mcp.policy.rule"
	attrAction = "dynamic_mcp.policy.action"
	attrStatus = "dynamic_mcp.status"
)

// other is the conventions' value for what falls outside a known set: a
// method no MCP version defines, an error code of nobody's.
const other = "_OTHER"

// unknownTarget stands for a tool or prompt a client named that does not
// exist, so that invented names never become label values.
const unknownTarget = "_unknown"

// knownMethods are the methods of the MCP specification (2025-11-25 and
// before). Any other is counted as _OTHER: a client chooses the method
// names it sends, and each new one would be a new series.
var knownMethods = map[string]bool{
	"initialize": true, "ping": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"tasks/get": true, "tasks/list": true, "tasks/result": true, "tasks/cancel": true,
	"sampling/createMessage": true, "elicitation/create": true, "roots/list": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/message": true, "notifications/roots/list_changed": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true,
	"notifications/resources/list_changed": true, "notifications/resources/updated": true,
	"notifications/tasks/status": true, "notifications/elicitation/complete": true,
}

// methodName is method, or _OTHER when MCP defines no such method.
func methodName(method string) string {
	if knownMethods[method] {
		return method
	}
	return other
}

// hubTools are the tools the hub answers itself (dynamic mode's
// meta-tools): a tools/call of one of them is routed nowhere, yet names a
// tool that exists.
var hubTools = map[string]bool{"get_dynamic_tools": true, "call_dynamic_tool": true, "search_dynamic_tools": true}

// callTarget is the tool (or prompt) a call is about, as a label value:
// the upstream's name where the call was routed, which comes from its
// list; a hub tool's name; unknownTarget for a name that matched nothing;
// "" for a call about neither.
func callTarget(c *traffic.Call) (tool, prompt string) {
	var name *string
	switch c.Method {
	case "tools/call":
		name = &tool
	case "prompts/get":
		name = &prompt
	default:
		return "", ""
	}
	switch {
	case c.Group != "" && c.Status != traffic.StatusNotFound:
		*name = c.Target
	case c.Method == "tools/call" && hubTools[stringField(c.Params, "name")]:
		*name = stringField(c.Params, "name")
	default:
		*name = unknownTarget
	}
	return tool, prompt
}

// errorType is error.type for how a request ended, "" for success: the
// JSON-RPC error code answered, as the conventions ask, "tool_error" for a
// result with isError, "cancelled" for a request that got no answer.
func errorType(status traffic.Status, err error) string {
	switch {
	case status == traffic.StatusCancelled:
		return "cancelled"
	case status == traffic.StatusToolError:
		return "tool_error"
	case err == nil:
		return ""
	}
	return codeName(jsonrpc.ToError(err).Code)
}

// hopErrorType is error.type for a hop to an upstream: its JSON-RPC
// error's code, "timeout" or "cancelled" when it got no answer in time,
// "tool_error" for an isError result (as the hub decided), _OTHER for a
// failure of the connection.
func hopErrorType(h *traffic.Hop) string {
	err := h.Err
	switch {
	case err == nil && h.ToolError:
		return "tool_error"
	case err == nil:
		return ""
	}
	// Declared past the answered hops: errors.As's target escapes, an
	// allocation that every hop took, failed or not, when it was first.
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return codeName(rpc.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return other
}

// codeName is a JSON-RPC error code as error.type: the code itself where
// it is one JSON-RPC reserves (the predefined errors and the server
// errors, -32000 to -32099, where MCP's own are), _OTHER for any other an
// upstream may answer with.
func codeName(code int) string {
	if code <= -32000 && code >= -32099 || code >= -32700 && code <= -32600 {
		return strconv.Itoa(code)
	}
	return other
}

// networkTransport is network.transport for a hub or upstream transport:
// pipe for stdio, tcp for HTTP (the conventions' words).
func networkTransport(transport string) string {
	if transport == "stdio" {
		return "pipe"
	}
	return "tcp"
}

// stringField is the string at key of obj, "" when there is none. obj is
// checked JSON already, a request's params or a part of them (see
// traffic.Call), so it is scanned, not validated again.
func stringField(obj json.RawMessage, key string) string {
	o, err := jsonrpc.ScanObject(obj)
	if err != nil {
		return ""
	}
	return stringValue(o.Field(key))
}

// stringValue is the text of a raw JSON string, "" for any other value.
func stringValue(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
