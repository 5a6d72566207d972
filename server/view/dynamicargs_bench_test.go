package view

import (
	"encoding/json"
	"testing"
)

// BenchmarkParseDynamicArgs and BenchmarkUnmarshalDynamicArgs compare
// ParseDynamicArgs with the json.Unmarshal it replaced.
var benchArgs = json.RawMessage(`{"group":"f","name":"echo","args":{"text":"x"}}`)

func BenchmarkParseDynamicArgs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ParseDynamicArgs(benchArgs)
	}
}

func BenchmarkUnmarshalDynamicArgs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var a DynamicArgs
		_ = json.Unmarshal(benchArgs, &a)
	}
}
