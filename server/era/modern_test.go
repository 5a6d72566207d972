package era

import (
	"bytes"
	"encoding/json"
	"testing"
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
			got := DecorateModern(tt.method, json.RawMessage(tt.result))
			if string(got) != tt.want {
				t.Fatalf("DecorateModern(%s)\n got %s\nwant %s", tt.method, got, tt.want)
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
		if got := Modern(json.RawMessage(tt.params)); got != tt.want {
			t.Errorf("Modern(%s) = %v, want %v", tt.params, got, tt.want)
		}
	}
}

func TestDecorateModern(t *testing.T) {
	got := DecorateModern("tools/list", json.RawMessage(`{"tools":[],"ttlMs":5}`))
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m["resultType"] != "complete" || m["ttlMs"] != float64(5) || m["cacheScope"] != "private" {
		t.Errorf("decorated: %s", got)
	}
	if got := DecorateModern("tools/call", json.RawMessage(`{"content":[],"resultType":"input_required"}`)); !bytes.Contains(got, []byte(`"input_required"`)) || bytes.Contains(got, []byte("ttlMs")) {
		t.Errorf("tools/call decorated: %s", got)
	}
	if !Modern(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)) ||
		Modern(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`)) || Modern(nil) {
		t.Error("Modern misjudges")
	}
}
