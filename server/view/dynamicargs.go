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
	return unmarshalDynamicArgs(arguments)
}

// unmarshalDynamicArgs is ParseDynamicArgs through json.Unmarshal, apart
// so that what Unmarshal is given (and so moves to the heap) is not
// ParseDynamicArgs' own: the usual call allocates nothing for it.
func unmarshalDynamicArgs(arguments json.RawMessage) (DynamicArgs, error) {
	var args DynamicArgs
	err := json.Unmarshal(arguments, &args)
	return args, err
}

// scanDynamicArgs is ParseDynamicArgs' one scan, which keeps nothing of
// it (jsonrpc.EachMember); false when arguments are not of the usual
// shape.
func scanDynamicArgs(arguments json.RawMessage, args *DynamicArgs) bool {
	strs := [...]struct {
		key  string
		into *string
	}{{"group", &args.Group}, {"name", &args.Name}}
	raws := [...]struct {
		key  string
		into *json.RawMessage
	}{{"args", &args.Args}, {"arguments", &args.Arguments}, {"query", &args.Query}, {"limit", &args.Limit}}
	var seen [len(strs) + len(raws)]bool
	usual := true
	// usual stays true only while each member is one of these, once: a
	// member that is none of them, one twice, or a name that is not a
	// string is left to Unmarshal.
	member := func(key, v []byte) bool {
		for i, s := range strs {
			if !jsonrpc.KeyEquals(key, s.key) {
				continue
			}
			if usual = !seen[i]; !usual {
				return false
			}
			seen[i] = true
			if string(v) == "null" { // leaves the string as it was, as Unmarshal does
				return true
			}
			*s.into, usual = jsonrpc.StringValue(v) // not ok: Unmarshal's error says which type it got
			return usual
		}
		for i, r := range raws {
			if !jsonrpc.KeyEquals(key, r.key) {
				continue
			}
			if usual = !seen[len(strs)+i]; !usual {
				return false
			}
			seen[len(strs)+i] = true
			*r.into = json.RawMessage(v)
			return true
		}
		usual = false
		return false
	}
	return jsonrpc.EachMember(arguments, member) == nil && usual
}
