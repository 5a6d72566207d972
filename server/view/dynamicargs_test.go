package view

import (
	"encoding/json"
	"reflect"
	"testing"
)

// ParseDynamicArgs reads every meta-tool call's arguments as json.Unmarshal
// does: the same values, and an error where Unmarshal has one.
func TestParseDynamicArgsAsUnmarshal(t *testing.T) {
	for _, args := range []string{
		``, `null`, `{}`,
		`{"group":"f","name":"echo","args":{"text":"x"}}`,
		`{"group":"f","name":"echo","args":null}`,
		`{"group":"f","name":"echo"}`,
		`{"group":null,"name":"echo","args":[1,2]}`,
		`{"group":"f\u00e9\n","name":"e\"cho","args":{}}`,
		`{"group":"f","name":"echo","arguments":{"a":1},"args":{"b":2}}`,
		`{"group":"","query":"read file","limit":5}`,
		`{"query":{"x":1},"limit":"ten"}`,
		`{"Group":"f","name":"echo"}`,
		`{"GROUP":"f","group":"g"}`,
		`{"group":"f","name":"echo","extra":true}`,
		`{"group":1,"name":"echo"}`,
		`{"group":"f","name":["echo"]}`,
		`{"group":"f","name":true}`,
		`[1,2]`, `"text"`, `3`,
		`{ "group" : "f" , "name" : "echo" , "args" : { "text" : "x" } }`,
	} {
		var want DynamicArgs
		var wantErr error
		if args != "" && args != "null" {
			wantErr = json.Unmarshal([]byte(args), &want)
		}
		if args != "" && !json.Valid([]byte(args)) {
			t.Fatalf("test case %s is not JSON", args)
		}
		got, err := ParseDynamicArgs(json.RawMessage(args))
		if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want %v", args, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("%s: %+v, want %+v", args, got, want)
		}
	}
}

// normal makes empty raw values nil, as both readers may leave them.
func normal(a DynamicArgs) DynamicArgs {
	for _, r := range []*json.RawMessage{&a.Args, &a.Arguments, &a.Query, &a.Limit} {
		if len(*r) == 0 {
			*r = nil
		}
	}
	return a
}

// The usual call_dynamic_tool arguments are read in one scan, not left to
// json.Unmarshal.
func TestParseDynamicArgsUsualShapeScanned(t *testing.T) {
	for _, args := range []string{
		`{"group":"f","name":"echo","args":{"text":"x"}}`,
		`{"group":"f"}`,
		`{"group":"","query":"read file","limit":5}`,
	} {
		var a DynamicArgs
		if !scanDynamicArgs(json.RawMessage(args), &a) {
			t.Errorf("%s was left to json.Unmarshal", args)
		}
	}
}
