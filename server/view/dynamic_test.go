package view

import (
	"encoding/json"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// upstreamTool is a tool definition as an upstream might write it.
const upstreamTool = `{"title":"<T>","name":"search","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema",` +
	`"type":"object", "properties":{"q":{"type":"string","description":"a & b <i>"},"n":{"type":"integer","maximum":1e2}}},` +
	`"description":"Search <things> & more","x-vendor":9007199254740993}`

func TestGetDynamicToolsText(t *testing.T) {
	g := &GroupView{Name: "web", State: upstream.StateReady, Tools: []json.RawMessage{
		json.RawMessage(upstreamTool),
		json.RawMessage("{\"inputSchema\": {\"type\": \"object\"},\n \"name\": \"bare\", \"description\": \"\"}"),
		json.RawMessage(`{"name":7,"description":"a name that is not a string: left out"}`),
	}}
	v := &View{Groups: []*GroupView{g}, GroupIndex: map[string]*GroupView{"web": g}}
	res := v.GetDynamicTools(DynamicArgs{Group: "web"})
	var r struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", res, err)
	}
	// The text the LLM reads: an object with the group and its tools in
	// the upstream's bytes, keys in its order, <, > and & as they are,
	// $schema and whitespace gone; the same bytes as structuredContent.
	want := `{"group":"web","tools":[{"name":"search","description":"Search <things> & more","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"a & b <i>"},"n":{"type":"integer","maximum":1e2}}}},` +
		`{"name":"bare","inputSchema":{"type":"object"}}]}`
	if r.Content[0].Text != want {
		t.Fatalf("text\n got %s\nwant %s", r.Content[0].Text, want)
	}
	if sc := jsonrpc.Field(res, "structuredContent"); string(sc) != want {
		t.Fatalf("structuredContent\n got %s\nwant %s", sc, want)
	}
	if !json.Valid([]byte(r.Content[0].Text)) {
		t.Fatal("the text is not JSON")
	}
}
