package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// notYetThroughHub are the checks of the suite's 2026-07-28 requirements
// that pass against the server directly and that this hub does not pass
// yet, each with the reason; the test expects every other check that
// passes directly to pass through the hub. Each reason names the part of
// an issue that removes it. None is left: the three subscriptions/listen
// checks of server-stateless pass through the hub since it serves
// subscriptions/listen over HTTP (issue 21, item 2).
var notYetThroughHub = map[string]string{}

// TestConformance20260728 runs the newest pre-release of the official
// conformance suite with its --requirements 2026-07-28 run (the scenarios
// that revision requires, server-stateless and the input-required-result
// ones among them, and the extension and pending ones it runs beside
// them) against mcp-go's conformance server directly and through the hub
// over HTTP, and expects every check that passes directly to pass through
// the hub. The list is computed here, from the suite's results; only
// notYetThroughHub is written down. The hub has a second group, the fake
// upstream with the input-required-result scenarios' tools, which
// mcp-go's server has not: those scenarios must pass whole through the
// hub (checkInputRequired), in the same run of the suite.
func TestConformance20260728(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a while; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceNext)
	// An upstream for the direct run and another behind the hub, so that
	// the two runs go at once: scenarios change the server's tools, and
	// what one run sees must not be the other's doing.
	upAddr, directAddr := startConformanceUpstream(t), startConformanceUpstream(t)
	base, _ := startPlainHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  conformance:
    description: mcp-go's conformance server
    url: http://%s/mcp
    prefix: false
  mrtr:
    description: the suite's input-required-result tools, on 2026-07-28
    command: %q
    args: ["-modern"]
    prefix: false
`, upAddr, fakeBin), "--insecure-no-auth")
	c := httpClient(t, base, map[string]string{})
	c.initialize("2025-11-25")
	c.waitFlatTools(10 + fakeTools + 8) // mcp-go's, and the fake's with mrtrTools

	start := time.Now()
	var direct, hub conformanceResults
	var directErr error
	directDir := t.TempDir()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		direct, directErr = conformanceRun(directDir, node22, suite, "http://"+directAddr+"/mcp", "--requirements", "2026-07-28")
	}()
	hub, hubErr := conformanceRun(t.TempDir(), node22, suite, base+"/mcp", "--requirements", "2026-07-28")
	<-ran
	took := time.Since(start)
	if err := errors.Join(directErr, hubErr); err != nil {
		t.Fatal(err)
	}
	if n := len(direct.scenarios()); n < 40 {
		t.Fatalf("the suite ran %d scenarios directly", n)
	}
	if d, h := direct.scenarios(), hub.scenarios(); !slices.Equal(d, h) {
		t.Fatalf("the suite ran other scenarios through the hub:\ndirectly %v\nthrough the hub %v", d, h)
	}
	for _, key := range direct.passed() {
		if hub[key].Status == "SUCCESS" {
			continue
		}
		if scenario, _, _ := strings.Cut(key, "/"); slices.Contains(upstreamDropsNotifications, scenario) {
			// mcp-go's server loses this notification itself, in most runs
			// and not in all: TestConformanceSuite holds the hub to it with
			// an upstream that does not.
			t.Logf("%s passed directly, not through the hub: the upstream's own loss", key)
			continue
		}
		if why, ok := notYetThroughHub[key]; ok {
			t.Logf("not yet through the hub (%s): %s", why, key)
			continue
		}
		if passesAgain(t, node22, suite, base+"/mcp", key, hub[key]) {
			continue
		}
		t.Errorf("%s passes directly, through the hub %s: %s", key, hub[key].Status, hub[key].ErrorMessage)
	}
	checkInputRequired(t, hub)
	for key, why := range notYetThroughHub {
		if hub[key].Status == "SUCCESS" {
			t.Logf("%s passes through the hub now: remove it from notYetThroughHub (%s)", key, why)
		}
	}
	t.Logf("conformance suite %s, --requirements 2026-07-28, in %s:\n"+
		"  directly:        %s\n  through the hub: %s\n"+
		"  server-stateless directly: %s; through the hub: %s",
		conformanceNext, took.Round(time.Second), direct.counts(""), hub.counts(""),
		direct.counts("server-stateless"), hub.counts("server-stateless"))
}

// suiteCutShort are the messages of checks that read a stream for a fixed
// 0.5-1.5 s of the suite's own (subscriptions/listen, a streamed call; no
// option changes it): on a loaded machine the frames through the hub's
// extra hop can come later.
var suiteCutShort = regexp.MustCompile(`Failed to open or receive frames|Failed to open stream line|failed to return communication frames|Failed to receive progressive stream chunk|dropped or failed to yield frame`)

// passesAgain runs the scenario of the check key that failed through the
// hub (got) alone, up to three times, when it failed on the suite's own
// fixed read of a stream, and reports whether it passed.
func passesAgain(t *testing.T, node22, suite, url, key string, got conformanceCheck) bool {
	t.Helper()
	if !suiteCutShort.MatchString(got.ErrorMessage) {
		return false
	}
	scenario, _, _ := strings.Cut(key, "/")
	for i := 1; i <= 3; i++ {
		if again := runConformance(t, node22, suite, url, "--requirements", "2026-07-28", "--scenario", scenario); again[key].Status == "SUCCESS" {
			t.Logf("%s failed through the hub on the suite's fixed read of a stream (%s); run again alone, it passed (try %d)", key, got.ErrorMessage, i)
			return true
		}
	}
	return false
}

// conformanceCheck is one check's result as the suite writes it.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	ErrorMessage string `json:"errorMessage"`
}

// conformanceResults are a run's checks by "scenario/check id". A check
// the suite reports more than once (once per probe) has its worst status.
type conformanceResults map[string]conformanceCheck

// runConformance runs the suite's server command against url with args,
// its results written to a directory of their own, and reads them back.
func runConformance(t *testing.T, node22, suite, url string, args ...string) conformanceResults {
	t.Helper()
	res, err := conformanceRun(t.TempDir(), node22, suite, url, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// conformanceRun is runConformance with its results in dir, its failure
// returned: it may run on a goroutine of the test's.
func conformanceRun(dir, node22, suite, url string, args ...string) (conformanceResults, error) {
	// --timeout: each scenario's, 30 s by default.
	cmd := exec.Command(filepath.Join(node22, "node"), append([]string{suite, "server", "--url", url, "-o", dir, "--timeout", clientTimeoutMS()}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput() // failing scenarios make it exit 1
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("the suite wrote no results for %s %v:\n%s", url, args, out)
	}
	// Each scenario's results are in server-<scenario>-<time>/.
	scenarioDir := regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	worse := map[string]int{"SUCCESS": 0, "INFO": 0, "SKIPPED": 1, "WARNING": 2, "FAILURE": 3}
	res := conformanceResults{}
	for _, f := range files {
		m := scenarioDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			return nil, fmt.Errorf("results in a directory of no scenario: %s", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for _, c := range checks {
			key := m[1] + "/" + c.ID
			if old, ok := res[key]; !ok || worse[c.Status] > worse[old.Status] {
				res[key] = c
			}
		}
	}
	return res, nil
}

// scenarios are the scenarios run, sorted.
func (r conformanceResults) scenarios() []string {
	var out []string
	for key := range r {
		s, _, _ := strings.Cut(key, "/")
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// passed are the checks that passed, sorted.
func (r conformanceResults) passed() []string {
	var out []string
	for key, c := range r {
		if c.Status == "SUCCESS" {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// counts says how many scenarios passed whole and how many checks passed,
// of scenario alone when it is not "".
func (r conformanceResults) counts(scenario string) string {
	checks, passed := 0, 0
	failed := map[string]bool{} // by scenario: one of its checks failed
	for key, c := range r {
		s, _, _ := strings.Cut(key, "/")
		if scenario != "" && s != scenario {
			continue
		}
		checks++
		if c.Status == "SUCCESS" {
			passed++
		}
		failed[s] = failed[s] || c.Status == "FAILURE"
	}
	whole := 0
	for _, f := range failed {
		if !f {
			whole++
		}
	}
	if scenario != "" {
		return fmt.Sprintf("%d of %d checks passed", passed, checks)
	}
	return fmt.Sprintf("%d of %d scenarios passed (no check failed), %d of %d checks passed", whole, len(failed), passed, checks)
}
