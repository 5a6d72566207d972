package jsonschema

import (
	"strings"
	"sync"
	"testing"
)

// The drafts' meta-schemas are compiled when the first Compiler is made,
// not at init (dynamic-mcp's change, see README.md), and compilers made at
// once all get them whole.
func TestMetaSchemasCompiledAtFirstCompiler(t *testing.T) {
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if d.sch != nil {
			t.Fatalf("%s: its meta-schema was compiled before any Compiler was made", d.url)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			doc, err := UnmarshalJSON(strings.NewReader(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`))
			if err != nil {
				errs <- err
				return
			}
			c := NewCompiler()
			if err := c.AddResource("urn:test", doc); err != nil {
				errs <- err
				return
			}
			s, err := c.Compile("urn:test")
			if err != nil {
				errs <- err
				return
			}
			inst, _ := UnmarshalJSON(strings.NewReader(`{"a":1}`))
			if err := s.Validate(inst); err == nil {
				t.Error(`{"a":1} passed a schema that wants a string`)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if d.sch == nil {
			t.Fatalf("%s: its meta-schema was not compiled with the first Compiler", d.url)
		}
	}
}
