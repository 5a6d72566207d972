package jsonschema

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// freshProcessEnv names the test a child of the test binary runs (see
// inFreshProcess).
const freshProcessEnv = "JSONSCHEMA_FRESH_PROCESS_TEST"

// inFreshProcess runs t alone in a new process of the test binary, and
// fails t where it fails there or did not run.
func inFreshProcess(t *testing.T) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), freshProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
}

// The drafts' meta-schemas are compiled draft by draft, when a schema of
// that draft is first checked against them, not at init and not all at
// once (dynamic-mcp's change, see README.md); compilers working at once
// all get them whole, and each draft's schemas are checked against its own.
// The drafts are the process's: the check runs in a process of its own,
// where nothing has compiled a schema yet (go test -count=2 runs it twice).
func TestMetaSchemasCompiledDraftByDraft(t *testing.T) {
	if os.Getenv(freshProcessEnv) != t.Name() {
		inFreshProcess(t)
		return
	}
	drafts := []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}
	for _, d := range drafts {
		if d.metas.sch != nil {
			t.Fatalf("%s: its meta-schema was compiled before any schema was", d.url)
		}
	}
	compile := func(schema string) (*Schema, error) {
		doc, err := UnmarshalJSON(strings.NewReader(schema))
		if err != nil {
			return nil, err
		}
		c := NewCompiler()
		if err := c.AddResource("urn:test", doc); err != nil {
			return nil, err
		}
		return c.Compile("urn:test")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := compile(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`)
			if err != nil {
				errs <- err
				return
			}
			inst, _ := UnmarshalJSON(strings.NewReader(`{"a":1}`))
			if err := s.Validate(inst); err == nil {
				errs <- fmt.Errorf(`{"a":1} passed a schema that wants a string`)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, d := range drafts {
		if got, want := d.metas.sch != nil, d == Draft2020; got != want {
			t.Fatalf("%s: compiled %v after a schema of 2020-12 (the default), want %v", d.url, got, want)
		}
	}
	// Each other draft when a schema names it, and its meta-schema
	// checks that schema: a minimum that is not a number is refused.
	for _, d := range drafts {
		if _, err := compile(fmt.Sprintf(`{"$schema":%q,"minimum":"one"}`, d.url)); err == nil {
			t.Errorf("%s: a schema whose minimum is a string compiled", d.url)
		}
		if _, err := compile(fmt.Sprintf(`{"$schema":%q,"minimum":1}`, d.url)); err != nil {
			t.Errorf("%s: %v", d.url, err)
		}
		if d.metas.sch == nil {
			t.Errorf("%s: not compiled after a schema of it was", d.url)
		}
	}
}

// A draft whose meta-schemas fail to compile panics at every load, never
// serving a half-compiled draft (a sync.Once counts a panic as done).
func TestDraftThatFailedToCompilePanicsAgain(t *testing.T) {
	d := &Draft{
		version:       Draft2020.version,
		url:           Draft2020.url,
		id:            Draft2020.id,
		subschemas:    Draft2020.subschemas,
		vocabPrefix:   Draft2020.vocabPrefix,
		allVocabs:     map[string]*Schema{"nope": nil},
		defaultVocabs: Draft2020.defaultVocabs,
	}
	for i := range 2 {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("load %d of a draft with an unknown vocabulary did not panic", i+1)
				}
			}()
			d.load()
		}()
	}
}
