package server

import (
	"encoding/json"
	"testing"

	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
)

// upstreamTool is a tool definition as an upstream might write it.
const upstreamTool = `{"title":"<T>","name":"search","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema",` +
	`"type":"object", "properties":{"q":{"type":"string","description":"a & b <i>"},"n":{"type":"integer","maximum":1e2}}},` +
	`"description":"Search <things> & more","x-vendor":9007199254740993}`

func TestFlatRenameKeepsBytes(t *testing.T) {
	t.Parallel()
	got, err := setField(json.RawMessage(upstreamTool), "name", "web__search")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"title":"<T>","name":"web__search",` + upstreamTool[len(`{"title":"<T>","name":"search",`):]
	if string(got) != want {
		t.Fatalf("renamed\n got %s\nwant %s", got, want)
	}
	list := views.ListResult("tools", []json.RawMessage{got, json.RawMessage(`{"name":"b"}`)}, "")
	if string(list) != `{"tools":[`+want+`,{"name":"b"}]}` {
		t.Fatalf("tools/list %s", list)
	}
	if list := views.ListResult("tools", nil, ""); string(list) != `{"tools":[]}` {
		t.Fatalf("empty tools/list %s", list)
	}
}
