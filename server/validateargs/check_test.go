package validateargs

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
)

// quickSchemas are input schemas as tools write them, those the quick
// check reads and those it leaves to the validator.
var quickSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}}}`,
	`{"type":"object","properties":{"q":{"type":"string","minLength":1,"maxLength":5},"n":{"type":"integer","minimum":1,"maximum":10}},"required":["q"],"additionalProperties":false}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"url":{"type":"string","format":"uri"},"when":{"type":"string","format":"date-time"},"k":{"type":"string","enum":["a","b","\u00e9"]}},"required":["url","k"]}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"minItems":1,"maxItems":3},"o":{"type":"object","additionalProperties":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":5}}},"required":["tags"]}`,
	`{"type":"object","properties":{"x":{"type":["integer","null"]},"y":{"type":"number"},"b":{"type":"boolean"},"any":true},"required":["x","z"]}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}},"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"v":{"type":"integer","maximum":-1}},"required":["v"]}}}}`,
	`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
	`{"type":"object","properties":{"x":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string"}}}`,
	`{"type":"object","properties":{"x":{"type":"number","multipleOf":2}},"minProperties":1}`,
	`{}`,
	`{"type":"object","properties":{"x":false}}`,
	// pydantic: Optional as anyOf, models as $defs; draft-07 $refs; cycles of $refs
	`{"$defs":{"M":{"properties":{"v":{"title":"V","type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/M"},{"type":"null"}],"default":null}},"required":["v"],"title":"M","type":"object"}},"properties":{"m":{"$ref":"#/$defs/M"},"s":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},"required":["m"],"title":"args","type":"object"}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"d":{"type":"string","minLength":2}},"type":"object","properties":{"x":{"$ref":"#/definitions/d","type":"integer"}},"allOf":[{"required":["x"]}]}`,
	`{"type":"object","anyOf":[{"$ref":"#"},{"$ref":"#"}]}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}},"properties":{"x":{"$ref":"#/definitions/a"}}}`,
}

// quickArgs are arguments, fitting and not, plain and escaped.
var quickArgs = []string{
	`{}`, `{"text":"x"}`, `{"text":"x","ms":5}`, `{"ms":5.0}`, `{"ms":1e2}`, `{"ms":"5"}`, `{"text":null}`,
	`{"q":"abc"}`, `{"q":""}`, `{"q":"abcdef"}`, `{"q":"h\u00e9"}`, `{"q":"héllo"}`, `{"q":"abc","n":10}`, `{"q":"abc","n":11}`,
	`{"q":"abc","n":0}`, `{"q":"abc","n":5,"extra":1}`, `{"\u0071":"abc"}`, `{"q":"a","q":"toolong"}`, `{"q":"toolong","q":"a"}`,
	`{"url":"https://x.example/","k":"a"}`, `{"url":"not a uri","k":"a"}`, `{"url":"https://x.example/","k":"c"}`,
	`{"url":"https://x.example/","k":"é"}`, `{"url":"https://x.example/","k":"\u00e9"}`, `{"url":"https://x.example/","when":"2024-01-01T00:00:00Z","k":"b"}`,
	`{"url":"https://x.example/","when":"yesterday","k":"b"}`, `{"url":5,"k":"a"}`,
	`{"tags":["a","b"]}`, `{"tags":[]}`, `{"tags":["a","b","c","d"]}`, `{"tags":["A"]}`, `{"tags":["a"],"o":{"p":1,"q":4.5}}`,
	`{"tags":["a"],"o":{"p":0}}`, `{"tags":["a"],"o":{"p":5}}`, `{"tags":["a"],"o":{"p":"1"}}`,
	`{"x":1,"z":0}`, `{"x":null,"z":[1,{"a":"}"}]}`, `{"x":1}`, `{"x":1.5,"z":1}`, `{"x":1,"z":1,"y":-2.5e-3,"b":true,"any":{"deep":[[["x"]]]}}`,
	`{"x":1,"z":1,"b":"true"}`, `{"n":1}`, `{"n":0}`, `{"n":-1}`, `{"m":1}`,
	`{"a":[{"v":-1},{"v":-5}]}`, `{"a":[{"v":0}]}`, `{"a":[{}]}`, `{"a":[{"v":-1} , { "v" : -2 } ]}`,
	` { "text" : "x" } `, `{"text":"x"} x`, `{"text":"x"`, `{"text":}`, `{"text":"x",}`, `[1]`, `"s"`, `{"a\"b":1}`,
	`{"x":"s"}`, `{"x":false}`, `{"x":"ab"}`, `{"x":"a"}`, `{"x":5}`,
	`{"m":{"v":1}}`, `{"m":{"v":1,"next":{"v":2,"next":null}},"s":null}`, `{"m":{"v":1,"next":{"v":"2"}}}`, `{"m":{"v":1,"next":{}}}`, `{"m":{},"s":"x"}`,
}

// The quick check never passes arguments the validator fails, and it
// does pass the plain fitting ones of the schemas it reads.
func TestQuickNeverPassesWhatTheValidatorFails(t *testing.T) {
	passed := 0
	for _, s := range quickSchemas {
		sch, err := compileArgSchema([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		q := quickOf(sch)
		for _, a := range quickArgs {
			if q == nil || !q.valid([]byte(a)) {
				continue
			}
			passed++
			if !validByValidator(sch, a) {
				t.Errorf("schema %s: the quick check passed %s, the validator fails it", s, a)
			}
		}
	}
	for _, c := range []struct {
		schema int
		args   string
	}{{0, `{"text":"x"}`}, {1, `{"q":"abc","n":10}`}, {1, `{"q":"héllo"}`}, {2, `{"url":"https://x.example/","k":"é"}`},
		{3, `{"tags":["a"],"o":{"p":1,"q":4}}`}, {4, `{"x":1,"z":1,"y":-2.5e-3,"b":true,"any":{"deep":[[["x"]]]}}`},
		{5, `{"n":1}`}, {6, `{"a":[{"v":-1} , { "v" : -2 } ]}`}, {7, `{"x":"s"}`}, {8, `{"x":"s"}`}, {10, `{"anything":[1]}`},
		{12, `{"m":{"v":1,"next":{"v":2,"next":null}},"s":null}`}, {13, `{"x":"ab"}`}} {
		sch, _ := compileArgSchema([]byte(quickSchemas[c.schema]))
		if q := quickOf(sch); q == nil || !q.valid([]byte(c.args)) {
			t.Errorf("schema %s: the quick check did not pass %s", quickSchemas[c.schema], c.args)
		}
	}
	for _, i := range []int{9, 11} {
		sch, _ := compileArgSchema([]byte(quickSchemas[i]))
		if quickOf(sch) != nil {
			t.Errorf("schema %s: the quick check claims a keyword it does not read", quickSchemas[i])
		}
	}
	t.Logf("%d of %d pairs passed quickly", passed, len(quickSchemas)*len(quickArgs))
}

func validByValidator(sch *jsonschema.Schema, args string) bool {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(args)))
	return err != nil || sch.Validate(inst) == nil // what the validator cannot read passes
}

func FuzzQuickNeverPassesWhatTheValidatorFails(f *testing.F) {
	for i, s := range quickSchemas {
		f.Add(s, quickArgs[i%len(quickArgs)])
	}
	for _, a := range quickArgs {
		f.Add(quickSchemas[1], a)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		sch, err := compileArgSchema([]byte(schema))
		if err != nil {
			return
		}
		if q := quickOf(sch); q != nil && q.valid([]byte(args)) && !validByValidator(sch, args) {
			t.Errorf("schema %s: the quick check passed %s, the validator fails it", schema, args)
		}
	})
}

// Every field of a compiled schema is one the quick check reads, one it
// refuses the schema for, or one that does not change whether a value is
// valid: a field added to the validator's copy must be placed here.
func TestQuickKnowsEverySchemaField(t *testing.T) {
	known := []string{
		// read
		"Bool", "Ref", "AllOf", "AnyOf", "Types", "Enum", "Format", "Required", "Properties", "AdditionalProperties", "MinItems", "MaxItems",
		"Items", "Items2020", "MinLength", "MaxLength", "Pattern", "Maximum", "Minimum", "ExclusiveMaximum", "ExclusiveMinimum",
		// refused
		"RecursiveRef", "DynamicRef", "Const", "Not", "OneOf", "If", "Then", "Else",
		"MaxProperties", "MinProperties", "PropertyNames", "PatternProperties", "Dependencies", "DependentRequired",
		"DependentSchemas", "UnevaluatedProperties", "UniqueItems", "Contains", "MinContains", "MaxContains",
		"AdditionalItems", "PrefixItems", "UnevaluatedItems", "ContentEncoding", "ContentMediaType", "ContentSchema",
		"MultipleOf", "Extensions",
		// no bearing on validity without the refs refused above, or annotations
		"up", "resource", "dynamicAnchors", "allPropsEvaluated", "allItemsEvaluated", "numItemsEvaluated",
		"DraftVersion", "Location", "ID", "Anchor", "RecursiveAnchor", "DynamicAnchor",
		"Title", "Description", "Default", "Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated",
	}
	typ := reflect.TypeFor[jsonschema.Schema]()
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !slices.Contains(known, name) {
			t.Errorf("jsonschema.Schema.%s: not placed for the quick check", name)
		}
	}
}

// BenchmarkArgCheck is the check of one call's fitting arguments: read
// where they lie (quick), and decoded and walked by the validator, as
// every call was before the quick check and as a schema it does not read
// still is.
func BenchmarkArgCheck(b *testing.B) {
	for _, c := range []struct{ name, schema, args string }{
		{"echo", quickSchemas[0], `{"text":"x"}`},
		{"typical", quickSchemas[1], `{"q":"abc","n":10}`},
	} {
		sch, err := compileArgSchema([]byte(c.schema))
		if err != nil {
			b.Fatal(err)
		}
		q, args := quickOf(sch), []byte(c.args)
		b.Run(c.name+"/quick", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !q.valid(args) {
					b.Fatal("not passed")
				}
			}
		})
		b.Run(c.name+"/validator", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
				if err != nil || sch.Validate(inst) != nil {
					b.Fatal("not passed")
				}
			}
		})
	}
}
