package main

import (
	"fmt"
	"sync"
	"testing"
)

// inputRequiredScenarios are the conformance pre-release's scenarios of
// multi-round-trip requests (SEP-2322).
var inputRequiredScenarios = []string{
	"input-required-result-basic-elicitation", "input-required-result-basic-list-roots", "input-required-result-basic-sampling",
	"input-required-result-capability-check", "input-required-result-ignore-extra-params", "input-required-result-missing-input-response",
	"input-required-result-multi-round", "input-required-result-multiple-input-requests", "input-required-result-non-tool-request",
	"input-required-result-request-state", "input-required-result-result-type", "input-required-result-tampered-state",
	"input-required-result-unsupported-methods", "input-required-result-validate-input",
}

// TestConformanceInputRequired runs the conformance pre-release's
// input-required-result scenarios against the hub over HTTP, in front of
// the fake upstream on 2026-07-28 with the scenarios' tools (-modern):
// the upstream's input_required rounds reach the suite through the hub,
// its requestState sealed inside the hub's (which the tampered-state
// scenario tampers with), and every check must pass. mcp-go's conformance
// server has none of these tools, so TestConformance20260728 cannot show
// them.
func TestConformanceInputRequired(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a while; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceNext)
	base, _ := startHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  mrtr:
    description: the suite's input-required-result tools, on 2026-07-28
    command: %q
    args: ["-modern"]
    prefix: false
`, fakeBin), "--insecure-no-auth")
	c := httpClient(t, base, map[string]string{})
	c.initialize("2025-11-25")
	c.waitFlatTools(fakeTools + 8)
	// Three scenarios at a time: each is a node process of its own (3.5 s
	// of wall time under load, 0.6 s of CPU), with a session of its own;
	// none changes the upstream's tools. One at a time took 74 s.
	results := make([]conformanceResults, len(inputRequiredScenarios))
	errs := make([]error, len(inputRequiredScenarios))
	running := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, name := range inputRequiredScenarios {
		dir := t.TempDir()
		wg.Go(func() {
			running <- struct{}{}
			defer func() { <-running }()
			results[i], errs[i] = conformanceRun(dir, node22, suite, base+"/mcp", "--scenario", name)
		})
	}
	wg.Wait()
	passed := 0
	for i, res := range results {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		whole := len(res) > 0
		for key, check := range res {
			if check.Status != "SUCCESS" {
				whole = false
				t.Errorf("%s: %s %s", key, check.Status, check.ErrorMessage)
			}
		}
		if whole {
			passed++
		}
	}
	t.Logf("the suite's pre-release, input-required-result scenarios through the hub: %d of %d passed whole", passed, len(inputRequiredScenarios))
}
