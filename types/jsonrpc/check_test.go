package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	tooDeep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	var wide strings.Builder
	wide.WriteString("{")
	for i := range 20 {
		if i > 0 {
			wide.WriteString(",")
		}
		wide.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		{` [1, -2.5e3, "x\"y", true, false, null, {}] `, nil},
		{deep, nil},
		{wide.String() + "}", nil},
		{wide.String() + `,"KXX":2}`, ErrDuplicateKey},
		{`{"a":{"b":1,"b":2}}`, ErrDuplicateKey},
		{`{"id":1,"ID":2}`, ErrDuplicateKey},
		{`{"m\u0061":1,"ma":2}`, ErrDuplicateKey},
		{`[{"a":1},{"a":1}]`, nil},
		{tooDeep, ErrTooDeep},
		{`{"a":1}{"b":2}`, ErrNotJSON},
		{`{"a":01}`, ErrNotJSON},
		{`{"a":"` + "\x01" + `"}`, ErrNotJSON},
		{`{"a" 1}`, ErrNotJSON},
		{`nul`, ErrNotJSON},
		{``, ErrNotJSON},
		{"\"\xff\"", nil}, // invalid UTF-8 passes, as in encoding/json
	} {
		err := Check([]byte(tc.in), MaxDepth)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%.60q) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

// FuzzCheck holds Check to encoding/json: whatever Check accepts is valid
// JSON, and valid JSON is refused only for depth or a repeated key.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `{"a":1,"A":2}`, `[[[[]]]]`, `"\u00e9"`, `-0.1e+5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b, 16)
		valid := json.Valid(b)
		switch {
		case err == nil && !valid:
			t.Fatalf("Check accepted invalid JSON %q", b)
		case err != nil && valid && errors.Is(err, ErrNotJSON):
			t.Fatalf("Check refused valid JSON %q: %v", b, err)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"files__read_text_file","arguments":{"path":"/home/user/project/README.md","head":20},"_meta":{"progressToken":"abc"}}}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := Check(msg, MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}
