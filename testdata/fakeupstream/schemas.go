package fakeupstream

// With -schemas, the fake offers tools whose input schemas test the hub's
// check of a call's arguments (server/validateargs.go): strict (a required
// string, an integer, no other properties), draft7 (the same in draft-07),
// remote (a $ref to the URL -schemas gives, which must never be fetched)
// and broken (a schema no draft allows). Each answers "called <name>".

import "encoding/json"

var schemas = flags.String("schemas", "", "also offer the strict, draft7, remote and broken tools; remote's schema is a $ref to this URL")

const strictSchema = `"type":"object","properties":{"path":{"type":"string"},"count":{"type":"integer"},` +
	`"mode":{"type":"string","pattern":"^(r|w)$"}},"required":["path"],"additionalProperties":false}`

func schemaTools() []any {
	if *schemas == "" {
		return nil
	}
	ref, _ := json.Marshal(*schemas)
	tool := func(n, schema string) json.RawMessage {
		name, _ := json.Marshal(toolName(n))
		return json.RawMessage(`{"name":` + string(name) + `,"description":"Check the hub's argument check","inputSchema":` + schema + `}`)
	}
	return []any{
		tool("strict", `{"$schema":"https://json-schema.org/draft/2020-12/schema",`+strictSchema),
		tool("draft7", `{"$schema":"http://json-schema.org/draft-07/schema#",`+strictSchema),
		tool("remote", `{"type":"object","properties":{"x":{"$ref":`+string(ref)+`}}}`),
		tool("broken", `{"type":"object","properties":{"x":{"type":12}}}`),
	}
}

// schemaCall answers a call of one of those tools, reporting whether it
// was one.
func schemaCall(req request, name string) bool {
	if *schemas == "" {
		return false
	}
	for _, n := range []string{"strict", "draft7", "remote", "broken"} {
		if name == toolName(n) {
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": "called " + n}}}})
			return true
		}
	}
	return false
}
