package validateargs

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
)

// FuzzDecodeArgs holds decodeArgs to what jsonschema.UnmarshalJSON makes
// of the same bytes, value for value, error for error.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"text":"x"}`, ` { "a" : [ 1 , -2.5e+3 , true , false , null , "s" ] , "b" : { } } `,
		`{"a":1,"a":2}`, `[]`, `"\u00e9\ud800x\n\"\\"`, "\"\xff\xfe\"", `{"k":"caf\u00e9"}`,
		`12345678901234567890123`, `0`, `-0.0E-0`, `{"a":`, `{} x`, `nul`, ``, `{"a":[{"b":[[]]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gerr := decodeArgs(raw)
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if (gerr != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, jsonschema.UnmarshalJSON's %v", raw, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, jsonschema.UnmarshalJSON's %#v", raw, got, want)
		}
	})
}

// TestDecodeArgsAllocates less than a json.Decoder holds that the check of
// a call's small arguments allocates their values, not a decoder.
func TestDecodeArgsAllocatesLessThanADecoder(t *testing.T) {
	raw := []byte(`{"text":"x","n":3}`)
	ours := testing.AllocsPerRun(50, func() { decodeArgs(raw) })
	theirs := testing.AllocsPerRun(50, func() { jsonschema.UnmarshalJSON(bytes.NewReader(raw)) })
	if ours >= theirs {
		t.Errorf("decodeArgs: %v allocations, a json.Decoder's: %v", ours, theirs)
	}
}
