package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestField(t *testing.T) {
	tests := []struct {
		name, obj, key string
		want           string // "" for nil
	}{
		{"first", `{"a":1,"b":2}`, "a", `1`},
		{"last", `{"a":1,"b":2}`, "b", `2`},
		{"missing", `{"a":1}`, "b", ""},
		{"empty object", `{}`, "a", ""},
		{"nested value kept whole", `{"a":{"b":[1,{"c":"}"}]},"d":0}`, "a", `{"b":[1,{"c":"}"}]}`},
		{"nested key not top level", `{"a":{"b":1}}`, "b", ""},
		{"escaped quote in a string before", `{"x":"say \"}\", then","a":"<&>"}`, "a", `"<&>"`},
		{"backslash at the end of a string", `{"x":"c:\\","a":true}`, "a", `true`},
		{"escaped key", `{"\u0061":1e2}`, "a", `1e2`},
		{"whitespace", " {\n\t\"a\" :  [ 1 , 2 ] ,\r\n \"b\":null } ", "a", `[ 1 , 2 ]`},
		{"big number", `{"n":9007199254740993}`, "n", `9007199254740993`},
		{"duplicate key", `{"a":1,"a":2}`, "a", ""},
		{"case differs", `{"A":1}`, "a", ""},
		{"not an object", `[1,2]`, "a", ""},
		{"not JSON", `{"a":1`, "a", ""},
		{"string not object", `"{\"a\":1}"`, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Field([]byte(tt.obj), tt.key)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("Field(%s, %q) = %s, want nil", tt.obj, tt.key, got)
				}
				return
			}
			if string(got) != tt.want {
				t.Fatalf("Field(%s, %q) = %s, want %s", tt.obj, tt.key, got, tt.want)
			}
		})
	}
}

func TestSetField(t *testing.T) {
	tests := []struct {
		name, obj, key, value string
		want                  string
		err                   error
	}{
		{"replace in place", `{"z":1,"name":"old","a":[1e2]}`, "name", `"new"`, `{"z":1,"name":"new","a":[1e2]}`, nil},
		{"replace keeps whitespace", `{ "z" : 1 , "name" : "old" , "a":2 }`, "name", `"g__t"`, `{ "z" : 1 , "name" : "g__t" , "a":2 }`, nil},
		{"append", `{"z":"<b>&amp;","a":1}`, "resultType", `"complete"`, `{"z":"<b>&amp;","a":1,"resultType":"complete"}`, nil},
		{"append before trailing space", `{"a":1 }`, "b", `2`, `{"a":1,"b":2 }`, nil},
		{"append to empty", `{}`, "b", `2`, `{"b":2}`, nil},
		{"append to empty with space", "{ \n }", "b", `2`, "{\"b\":2 \n }", nil},
		{"key needing escapes", `{}`, `<"k">`, `0`, `{"<\"k\">":0}`, nil},
		{"escaped key replaced", `{"\u006eame":"x"}`, "name", `"y"`, `{"\u006eame":"y"}`, nil},
		{"space around a value dropped", `{"a":1}`, "b", " \n2\t", `{"a":1,"b":2}`, nil},
		{"value kept as given", `{"a":1}`, "a", `{ "b" : "<" }`, `{"a":{ "b" : "<" }}`, nil},
		{"invalid value", `{"a":1}`, "a", `{`, "", ErrNotJSON},
		{"not JSON", `{"a":`, "a", `1`, "", ErrNotJSON},
		{"not an object", `[]`, "a", `1`, "", ErrNotObject},
		{"duplicate key", `{"a":1,"b":0,"a":2}`, "a", `3`, "", ErrDuplicateKey},
		{"key not UTF-8", `{}`, "a\xff", `1`, "", errKeyNotUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := []byte(tt.obj)
			got, err := SetField(obj, tt.key, []byte(tt.value))
			if !errors.Is(err, tt.err) {
				t.Fatalf("SetField error = %v, want %v", err, tt.err)
			}
			if string(got) != tt.want {
				t.Fatalf("SetField(%s, %q, %s)\n got %s\nwant %s", tt.obj, tt.key, tt.value, got, tt.want)
			}
			if string(obj) != tt.obj {
				t.Fatalf("SetField changed its input to %s", obj)
			}
		})
	}
}

func TestAddMissing(t *testing.T) {
	tests := []struct {
		name, obj string
		add       []Member
		want      string
	}{
		{"adds in order", `{"content":[],"b":"<&>"}`,
			[]Member{{"resultType", []byte(`"complete"`)}, {"ttlMs", []byte(`0`)}},
			`{"content":[],"b":"<&>","resultType":"complete","ttlMs":0}`},
		{"keeps what is there", `{"ttlMs":5000,"x":1}`,
			[]Member{{"resultType", []byte(`"complete"`)}, {"ttlMs", []byte(`0`)}},
			`{"ttlMs":5000,"x":1,"resultType":"complete"}`},
		{"nothing to add", `{ "a" : 1 }`, []Member{{"a", []byte(`2`)}}, `{ "a" : 1 }`},
		{"first of a repeated key wins", `{}`, []Member{{"a", []byte(`1`)}, {"a", []byte(`2`)}}, `{"a":1}`},
		{"empty object", `{}`, []Member{{"a", []byte(`1`)}, {"b", []byte(`2`)}}, `{"a":1,"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AddMissing([]byte(tt.obj), tt.add...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("AddMissing(%s)\n got %s\nwant %s", tt.obj, got, tt.want)
			}
		})
	}
	if _, err := AddMissing([]byte(`{}`), Member{"a", []byte(`nul`)}); !errors.Is(err, ErrNotJSON) {
		t.Fatalf("AddMissing with an invalid value: error %v, want ErrNotJSON", err)
	}
	if _, err := AddMissing([]byte(`1`), Member{"a", []byte(`1`)}); !errors.Is(err, ErrNotObject) {
		t.Fatalf("AddMissing to a number: error %v, want ErrNotObject", err)
	}
}

func TestDeleteField(t *testing.T) {
	tests := []struct {
		name, obj, key, want string
	}{
		{"first", `{"$schema":"x","type":"object","b":1}`, "$schema", `{"type":"object","b":1}`},
		{"middle", `{"type":"object", "$schema":"x", "b":1}`, "$schema", `{"type":"object", "b":1}`},
		{"last", `{"type":"object" , "$schema" : "x" }`, "$schema", `{"type":"object" }`},
		{"only", `{ "$schema":"x" }`, "$schema", `{  }`},
		{"absent", `{"z":1, "a":"<"}`, "$schema", `{"z":1, "a":"<"}`},
		{"nested is not top level", `{"p":{"$schema":"x"}}`, "$schema", `{"p":{"$schema":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DeleteField([]byte(tt.obj), tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("DeleteField(%s, %q)\n got %s\nwant %s", tt.obj, tt.key, got, tt.want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	got, err := Marshal(map[string]any{"text": `a <b> & "c"`, "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"text":"a <b> & \"c\""}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
}

// FuzzSetField checks the splice functions against encoding/json: the
// object they return decodes as the input with the change made, and the
// bytes they were not asked to change are the input's.
func FuzzSetField(f *testing.F) {
	seeds := []struct{ obj, key, value string }{
		{`{"a":1,"b":2}`, "a", `"x"`},
		{`{"a":1,"b":2}`, "c", `{"d":[1e2]}`},
		{`{}`, "a", `null`},
		{` { "a" : "}\"{" , "b" : [ ] } `, "b", `9007199254740993`},
		{`{"\u0062":1}`, "b", `"<&>"`},
		{`{"a":1,"a":2}`, "a", `0`},
		{`[{"a":1}]`, "a", `0`},
		{`{"a":"\\"}`, "a", `""`},
	}
	for _, s := range seeds {
		f.Add([]byte(s.obj), s.key, []byte(s.value))
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string, value []byte) {
		orig := bytes.Clone(obj)
		var before map[string]any
		isObject := json.Valid(obj) && decode(obj, &before) == nil && before != nil
		got, err := SetField(obj, key, value)
		if !bytes.Equal(obj, orig) {
			t.Fatalf("SetField changed its input")
		}
		if !isObject || !json.Valid(value) || !utf8.ValidString(key) {
			if err == nil {
				t.Fatalf("SetField(%q, %q, %q) = %q, want an error", obj, key, value, got)
			}
			return
		}
		if errors.Is(err, ErrDuplicateKey) {
			return
		}
		if err != nil {
			t.Fatalf("SetField(%q, %q, %q): %v", obj, key, value, err)
		}
		var after map[string]any
		if err := decode(got, &after); err != nil {
			t.Fatalf("SetField(%q, %q, %q) = %q, which is not an object: %v", obj, key, value, got, err)
		}
		var v any
		_ = decode(value, &v)
		_, had := before[key]
		before[key] = v
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("SetField(%q, %q, %q) = %q, decodes to %v, want %v", obj, key, value, got, after, before)
		}
		if f := Field(got, key); !bytes.Equal(f, trimSpace(value)) {
			t.Fatalf("Field(%q, %q) = %q, want %q", got, key, f, value)
		}
		// Setting then deleting a key leaves what deleting it alone
		// leaves, byte for byte; deleting a key the object lacks leaves it
		// as it was.
		del, err := DeleteField(got, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DeleteField(obj, key)
		if err != nil {
			t.Fatal(err)
		}
		if !had && !bytes.Equal(want, obj) {
			t.Fatalf("DeleteField(%q, %q) = %q, want it unchanged", obj, key, want)
		}
		if !bytes.Equal(del, want) {
			t.Fatalf("DeleteField(SetField(%q, %q, %q)) = %q, want %q", obj, key, value, del, want)
		}
		var deleted map[string]any
		if err := decode(del, &deleted); err != nil {
			t.Fatalf("DeleteField gave %q, which is not an object: %v", del, err)
		}
		delete(before, key)
		if !reflect.DeepEqual(before, deleted) {
			t.Fatalf("DeleteField gave %q, decodes to %v, want %v", del, deleted, before)
		}
	})
}

// decode is json.Unmarshal keeping numbers' digits.
func decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}
