package search

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Entry is one tool as dynamic mode hands it to the model: its group
// ("" where the group is known, as in get_dynamic_tools' answer) and its
// definition as its server listed it.
type Entry struct {
	Group string
	Tool  json.RawMessage
}

// AppendEntries appends the JSON text of a list of tools, as the "tools"
// of get_dynamic_tools' and search_dynamic_tools' answers: an array of
// {"group", "name", "description", "inputSchema", "_meta"}, spliced from the
// definitions' own bytes with insignificant whitespace dropped. Keys stay
// in the order the server wrote them and <, > and & stay as they are,
// since the model reads this JSON as text and would see every escape. A
// definition with no string name is left out; an empty description is
// too, and the schema's top-level "$schema", which costs tokens and tells
// the model nothing (the original dynamic-mcp dropped it as well). Of
// _meta only ui is kept, for a tool that has it.
func AppendEntries(dst []byte, entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	for _, e := range entries {
		name := jsonrpc.Field(e.Tool, "name")
		if len(name) == 0 || name[0] != '"' {
			continue
		}
		if n++; n > 1 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		if e.Group != "" {
			g, _ := jsonrpc.Marshal(e.Group)
			b.WriteString(`"group":`)
			b.Write(g)
			b.WriteByte(',')
		}
		b.WriteString(`"name":`)
		b.Write(name)
		if d := jsonrpc.Field(e.Tool, "description"); len(d) > 0 && d[0] == '"' && string(d) != `""` {
			b.WriteString(`,"description":`)
			b.Write(d)
		}
		schema := jsonrpc.Field(e.Tool, "inputSchema")
		if schema == nil {
			schema = json.RawMessage("null")
		}
		b.WriteString(`,"inputSchema":`)
		b.Write(withoutSchemaKeyword(schema))
		if ui := jsonrpc.Field(jsonrpc.Field(e.Tool, "_meta"), "ui"); len(ui) > 0 && ui[0] == '{' {
			// An MCP App's link to its view (ext-apps _meta.ui): what a
			// host needs to render the tool's result, and nothing else
			// of _meta, which would cost every answer tokens.
			b.WriteString(`,"_meta":{"ui":`)
			b.Write(ui)
			b.WriteByte('}')
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	out := bytes.NewBuffer(dst)
	if err := json.Compact(out, b.Bytes()); err != nil {
		return dst, fmt.Errorf("tool definitions: %w", err)
	}
	return out.Bytes(), nil
}

// withoutSchemaKeyword drops a top-level "$schema" from a tool's input
// schema; every other byte of the schema is kept.
func withoutSchemaKeyword(schema json.RawMessage) json.RawMessage {
	if jsonrpc.Field(schema, "$schema") == nil {
		return schema
	}
	b, err := jsonrpc.DeleteField(schema, "$schema")
	if err != nil {
		return schema
	}
	return b
}
