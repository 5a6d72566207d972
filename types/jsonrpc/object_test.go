package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// A scanned Object reads and replaces members as Field and SetField do,
// and With changes several in one copy, every other byte kept.
func TestObject(t *testing.T) {
	const params = ` {"name":"g__t", "arguments":{"q":"<&>","n":1e2} ,"_meta":{"progressToken":7} } `
	o, err := ScanObject([]byte(params))
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != 3 {
		t.Errorf("Len = %d, want 3", o.Len())
	}
	for _, key := range []string{"name", "arguments", "_meta", "missing", "Name"} {
		if got, want := o.Field(key), Field([]byte(params), key); !bytes.Equal(got, want) {
			t.Errorf("Field(%q) = %s, Field of the bytes %s", key, got, want)
		}
	}
	for _, tc := range []struct {
		name    string
		members []Member
		want    string
	}{
		{"none", nil, params},
		{"replace one", []Member{{"name", []byte(`"t"`)}},
			` {"name":"t", "arguments":{"q":"<&>","n":1e2} ,"_meta":{"progressToken":7} } `},
		{"replace two, out of order", []Member{{"_meta", []byte(` {"progressToken":"hub-1"} `)}, {"name", []byte(`"t"`)}},
			` {"name":"t", "arguments":{"q":"<&>","n":1e2} ,"_meta":{"progressToken":"hub-1"} } `},
		{"replace the last and append", []Member{{"task", []byte(`{}`)}, {"_meta", []byte(`{}`)}},
			` {"name":"g__t", "arguments":{"q":"<&>","n":1e2} ,"_meta":{},"task":{} } `},
		{"same key twice: the first wins", []Member{{"name", []byte(`1`)}, {"name", []byte(`2`)}, {"x", []byte(`3`)}, {"x", []byte(`4`)}},
			` {"name":1, "arguments":{"q":"<&>","n":1e2} ,"_meta":{"progressToken":7},"x":3 } `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := o.With(tc.members...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("With = %s\nwant   %s", got, tc.want)
			}
			if string(o.Bytes()) != params {
				t.Errorf("With changed the object: %s", o.Bytes())
			}
		})
	}
	empty, err := ScanObject([]byte(`{ }`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := empty.With(Member{"a", []byte(`1`)}, Member{"b", []byte(`"<"`)}); string(got) != `{"a":1,"b":"<" }` {
		t.Errorf("With on an empty object = %s", got)
	}
	if _, err := (Object{}).With(Member{"a", []byte(`1`)}); !errors.Is(err, ErrNotObject) {
		t.Errorf("With on the zero Object: %v", err)
	}
	for _, b := range []string{``, `[1]`, `"{}"`, `null`} {
		if _, err := ScanObject([]byte(b)); !errors.Is(err, ErrNotObject) {
			t.Errorf("ScanObject(%q): %v, want ErrNotObject", b, err)
		}
	}
	if _, err := ParseObject([]byte(`{"a":1`)); !errors.Is(err, ErrNotJSON) {
		t.Errorf("ParseObject of a truncated object: %v", err)
	}
}

// FuzzScanObject: on any bytes ScanObject never panics nor reads past
// them, and on a valid object its reads and With agree with Field and
// SetField, which validate.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":2}`, `{`, `{"a"`, `{"a":`, `{"a":[1,{"b":"}"}`, `{"a":"\`, ` {"\u0062":1} `, `{"a":1,"a":2}`, `[]`} {
		f.Add([]byte(s), "a", []byte(`"x"`))
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string, value []byte) {
		o, err := ScanObject(obj)
		if err != nil || !json.Valid(obj) || !json.Valid(value) {
			if err == nil {
				o.Field(key)
				o.With(Member{key, bytes.TrimSpace(value)})
			}
			return
		}
		if got, want := o.Field(key), Field(obj, key); !bytes.Equal(got, want) {
			t.Fatalf("Field(%q, %q) = %q, want %q", obj, key, got, want)
		}
		got, gerr := o.With(Member{key, value})
		want, werr := SetField(obj, key, value)
		if (gerr == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("With(%q, %q, %q) = %q, %v; SetField gives %q, %v", obj, key, value, got, gerr, want, werr)
		}
	})
}

// EachMember gives the members ScanObject finds, in order, keys raw and
// values as they lie, stops when told, and refuses what is no object.
func TestEachMember(t *testing.T) {
	obj := []byte(` { "a" : 1, "b":{"c":[2]} ,"\u0064":"x" } `)
	o, err := ScanObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := EachMember(obj, func(k, v []byte) bool { got = append(got, string(k)+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	want := []string{`"a"=1`, `"b"={"c":[2]}`, `"\u0064"="x"`}
	if !slices.Equal(got, want) || o.Len() != len(want) {
		t.Fatalf("got %q (ScanObject: %d members), want %q", got, o.Len(), want)
	}
	if !KeyEquals([]byte(`"\u0064"`), "d") || KeyEquals([]byte(`"a"`), "b") {
		t.Fatal("KeyEquals reads a raw key wrong")
	}
	got = nil
	_ = EachMember(obj, func(k, v []byte) bool { got = append(got, string(k)); return false })
	if len(got) != 1 {
		t.Fatalf("went on after f returned false: %q", got)
	}
	for _, b := range []string{`[1]`, ``, `"x"`} {
		if err := EachMember([]byte(b), func(k, v []byte) bool { t.Fatalf("called for %q", b); return true }); err != ErrNotObject {
			t.Fatalf("%q: %v, want ErrNotObject", b, err)
		}
	}
	if err := EachMember([]byte(`{}`), func(k, v []byte) bool { t.Fatal("called for {}"); return true }); err != nil {
		t.Fatal(err)
	}
}
