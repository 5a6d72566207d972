package server

import (
	"encoding/json"
	"testing"

	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
)

// upstreamResult is a result as an upstream might write it: keys in no
// sorted order, <, > and & unescaped, numbers encoding/json would not
// write back the same, and whitespace.
const upstreamResult = `{"structuredContent":{"z":1e2, "big":9007199254740993,"html":"<b>&amp;</b>"},` +
	`"content":[{"type":"text","text":"a < b && c > d"}], "isError":false }`

func TestDecorateModernKeepsBytes(t *testing.T) {
	tests := []struct {
		name, method, result, want string
	}{
		{"call result", "tools/call", upstreamResult,
			upstreamResult[:len(upstreamResult)-2] + `,"resultType":"complete" }`},
		{"list with caching hints", "tools/list", `{"tools":[{"name":"t","description":"<&>"}],"nextCursor":"x"}`,
			`{"tools":[{"name":"t","description":"<&>"}],"nextCursor":"x","resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
		{"fields the upstream set are kept", "resources/read", `{"ttlMs":60000,"resultType":"complete","contents":[]}`,
			`{"ttlMs":60000,"resultType":"complete","contents":[],"cacheScope":"private"}`},
		{"empty result", "ping", `{}`, `{"resultType":"complete"}`},
		{"not an object is left alone", "tools/call", `[1,2]`, `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decorateModern(tt.method, json.RawMessage(tt.result))
			if string(got) != tt.want {
				t.Fatalf("decorateModern(%s)\n got %s\nwant %s", tt.method, got, tt.want)
			}
		})
	}
}

func TestModern(t *testing.T) {
	tests := []struct {
		params string
		want   bool
	}{
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"x"}`, true},
		{`{"name":"x", "_meta" : { "progressToken":1, "io.modelcontextprotocol/protocolVersion" : "2026-07-28" }}`, true},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, false},
		{`{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, false},
		{`{}`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := modern(json.RawMessage(tt.params)); got != tt.want {
			t.Errorf("modern(%s) = %v, want %v", tt.params, got, tt.want)
		}
	}
}

// upstreamTool is a tool definition as an upstream might write it.
const upstreamTool = `{"title":"<T>","name":"search","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema",` +
	`"type":"object", "properties":{"q":{"type":"string","description":"a & b <i>"},"n":{"type":"integer","maximum":1e2}}},` +
	`"description":"Search <things> & more","x-vendor":9007199254740993}`

func TestFlatRenameKeepsBytes(t *testing.T) {
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
