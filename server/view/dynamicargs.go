package view

import (
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ParseDynamicArgs reads the arguments of a meta-tool's call, exactly as
// json.Unmarshal into DynamicArgs reads them, from arguments a message's
// Decode has checked. The usual call_dynamic_tool arguments (only the
// keys DynamicArgs names, spelled as they are, group and name plain
// strings) are read from one scan of the object, without encoding/json's
// reflection and copies: its Unmarshal was a tenth of the hub's CPU time
// for each call through call_dynamic_tool (issue 33, 32 in flight).
// Anything else (another key, which Unmarshal may match in any case, a
// value of another type) goes through Unmarshal, for its answers.
func ParseDynamicArgs(arguments json.RawMessage) (DynamicArgs, error) {
	var args DynamicArgs
	if len(arguments) == 0 || string(arguments) == "null" {
		return args, nil
	}
	if scanDynamicArgs(arguments, &args) {
		return args, nil
	}
	args = DynamicArgs{}
	err := json.Unmarshal(arguments, &args)
	return args, err
}

// scanDynamicArgs is ParseDynamicArgs' one scan; false when arguments are
// not of the usual shape.
func scanDynamicArgs(arguments json.RawMessage, args *DynamicArgs) bool {
	o, err := jsonrpc.ScanObject(arguments)
	if err != nil {
		return false
	}
	found := 0
	for _, s := range [...]struct {
		key  string
		into *string
	}{{"group", &args.Group}, {"name", &args.Name}} {
		switch v := o.Field(s.key); {
		case v == nil:
		case string(v) == "null": // leaves the string as it was, as Unmarshal does
			found++
		default:
			str, ok := jsonrpc.StringValue(v)
			if !ok {
				return false // Unmarshal's error says which type it got
			}
			*s.into = str
			found++
		}
	}
	for _, r := range [...]struct {
		key  string
		into *json.RawMessage
	}{{"args", &args.Args}, {"arguments", &args.Arguments}, {"query", &args.Query}, {"limit", &args.Limit}} {
		if v := o.Field(r.key); v != nil {
			*r.into = json.RawMessage(v)
			found++
		}
	}
	// A member that is none of these, or one twice (Field gives nil for
	// it), is left to Unmarshal.
	return found == o.Len()
}
