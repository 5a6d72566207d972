package validateargs

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
)

// The arguments decoded for the validator are what jsonschema.UnmarshalJSON
// gives, for any bytes: the plain decoder takes what it can, and leaves
// the rest to it.
func FuzzInstanceAsUnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`{"text":"x"}`, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+10`, `01`, `1.`, `-`, `.5`, `1e`,
		`{"a":[1,2,{"b":null}],"c":"é"}`, `{"a":1,"a":2}`, `{"a":"\u00e9"}`, `{"a":"\n"}`, "{\"a\":\"\x01\"}",
		"\"\xff\"", `{"a":1}x`, ` {"a" : [ ] } `, `{"a":1,}`, `[1,]`, `{"a"}`, `"`, `{"a":tru}`, `[[[[]]]]`,
		`{"n":123456789012345678901234567890}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr := instance(b)
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("instance(%q) = %#v, %v; UnmarshalJSON: %#v, %v", b, got, gotErr, want, wantErr)
		}
	})
}

// Nesting is decoded as deep as encoding/json decodes it, and past that
// refused, as UnmarshalJSON refuses it.
func TestInstanceDeepNesting(t *testing.T) {
	for _, n := range []int{100, maxDepth, maxDepth + 1, maxDepth + 10} {
		for _, b := range []string{
			strings.Repeat("[", n) + strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1),
		} {
			_, err := instance([]byte(b))
			_, want := jsonschema.UnmarshalJSON(strings.NewReader(b))
			if (err == nil) != (want == nil) || (n <= maxDepth) != (err == nil) {
				t.Errorf("%d deep %.8q: %v, UnmarshalJSON %v", n, b, err, want)
			}
		}
	}
}
