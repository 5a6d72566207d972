package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// rateClock is the loop guards' clock, moved by hand: no test waits a
// minute for a bucket to refill.
type rateClock struct{ ns atomic.Int64 }

func (c *rateClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *rateClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// rateYAML is the config of a hub in mode in front of the fake upstream,
// group f with policy (rules, one a line, indented by six spaces) and
// more (top-level keys), auditing to audit.
func rateYAML(stateDir, audit, mode, policy, more string) string {
	return fmt.Sprintf("mode: %s\nstate_dir: %q\naudit: {path: %q}\nsettings: {call_timeout: 5s}\ngroups:\n  f:\n    description: fake\n    command: %q\n    policy:\n%s%s",
		mode, stateDir, audit, fakeBin, policy, more)
}

// rateHub runs a hub for yaml whose loop guards read a rateClock.
func rateHub(t *testing.T, yaml string) (*Hub, *upstream.Manager, *rateClock) {
	t.Helper()
	h, mgr := runHub(t, yaml, true)
	clock := &rateClock{}
	clock.ns.Store(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC).UnixNano())
	h.rates.Now = clock.now
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	return h, mgr, clock
}

// rateSession is a client session of h with id (and profile) that
// initialized declaring caps (a JSON object).
func rateSession(t *testing.T, h *Hub, id, profile, caps string) *pipeClient {
	t.Helper()
	c := servePipes(t, h, StdioOptions{SessionID: id, Profile: profile})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// rateAnswer is a tools/call's answer, decoded.
type rateAnswer struct {
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Rule       string          `json:"rule"`
			Action     string          `json:"action"`
			RetryAfter json.RawMessage `json:"retryAfter"`
		} `json:"data"`
	} `json:"error"`
}

func decodeRate(t *testing.T, line string) rateAnswer {
	t.Helper()
	var a rateAnswer
	mustJSON(t, line, &a)
	return a
}

// echo calls f__echo with text over c (id: a number) and returns the
// answer.
func echo(t *testing.T, c *pipeClient, id int, text string) rateAnswer {
	t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":%q}}}`, id, text))
	return decodeRate(t, c.answer(fmt.Sprint(id)))
}

// passed reports whether a was the upstream's result.
func (a rateAnswer) passed() bool { return a.Result != nil && !a.Result.IsError && a.Error == nil }

// refused checks that a is the loop guard's -32001 for rule, with
// retryAfter seconds.
func (a rateAnswer) refused(t *testing.T, what, rule string, retryAfter int) {
	t.Helper()
	e := a.Error
	if e == nil {
		t.Fatalf("%s: not refused: %+v", what, a.Result)
	}
	if e.Code != -32001 || e.Data.Rule != rule || e.Data.Action != "rate" || string(e.Data.RetryAfter) != fmt.Sprint(retryAfter) {
		t.Errorf("%s: error %d %q data %+v (retryAfter %s); want -32001, rule %s, action rate, retryAfter %d",
			what, e.Code, e.Message, e.Data, e.Data.RetryAfter, rule, retryAfter)
	}
	if want := fmt.Sprintf("of rule %s exceeded; retry after %ds", rule, retryAfter); !strings.Contains(e.Message, want) {
		t.Errorf("%s: message %q does not say %q", what, e.Message, want)
	}
}

// readAudit is the audit trail's records at path, once h is closed.
func readAudit(t *testing.T, h *Hub, path string) []auditRecord {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r auditRecord
		mustJSON(t, line, &r)
		out = append(out, r)
	}
	return out
}

// A rule rate: 3/minute: the 4th call within the minute is refused -32001
// with retryAfter in its data and a message that says when; the next is
// allowed once a token has come back (a third of a minute later); calls
// the rule does not match are not counted. The refused call is audited as
// rate_limited with its rule, and counted in /metrics.
func TestRateLimitRefusesOverTheLimit(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h, _, clock := rateHub(t, rateYAML(t.TempDir(), audit, "flat",
		"      - {name: echo-rate, action: allow, tool: echo, args: {text: \"loop*\"}, rate: 3/minute}\n      - {action: allow, tool: \"*\"}\n", ""))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := rateSession(t, h, "s1", "", `{}`)

	for i := 1; i <= 3; i++ {
		if a := echo(t, c, i, "loop"); !a.passed() {
			t.Fatalf("call %d of 3/minute: %+v", i, a.Error)
		}
	}
	echo(t, c, 4, "loop").refused(t, "the 4th call within a minute", "echo-rate", 20)
	if a := echo(t, c, 5, "other"); !a.passed() {
		t.Errorf("a call the rule does not match was limited: %+v", a.Error)
	}
	clock.advance(15 * time.Second)
	echo(t, c, 6, "loop").refused(t, "15s later", "echo-rate", 5)
	clock.advance(5 * time.Second)
	if a := echo(t, c, 7, "loop"); !a.passed() {
		t.Errorf("20s later, a token back: %+v", a.Error)
	}
	echo(t, c, 8, "loop").refused(t, "the token used", "echo-rate", 20)
	clock.advance(time.Hour)
	for i := 9; i <= 11; i++ {
		if a := echo(t, c, i, "loop"); !a.passed() {
			t.Errorf("call %d an hour later (the bucket full again, not over): %+v", i, a.Error)
		}
	}
	echo(t, c, 12, "loop").refused(t, "the 4th after the hour", "echo-rate", 20)

	rec := httptest.NewRecorder()
	telemetry.NewMetrics(h.mgr, telemetry.MetricsOptions{RateLimited: h.RateLimited, RateBuckets: h.RateBuckets}).Handler().
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`dynamic_mcp_rate_limited_total{group="f",rule="echo-rate"} 4` + "\n", "dynamic_mcp_rate_buckets 1\n", "dynamic_mcp_rate_buckets_evicted_total 0\n"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	recs := readAudit(t, h, audit)
	if len(recs) != 12 {
		t.Fatalf("%d audit records, want 12", len(recs))
	}
	if r := recs[3]; r.Decision != "rate_limited" || r.Rule != "echo-rate" || r.Outcome != "blocked" || r.Tool != "echo" {
		t.Errorf("the refused call's record: %+v", r)
	}
	if r := recs[2]; r.Decision != "allow" || r.Rule != "echo-rate" || r.Outcome != "ok" {
		t.Errorf("a call within the limit: %+v", r)
	}
}

// In dynamic mode call_dynamic_tool answers a call over the limit as it
// answers a policy block: the same -32001 error.
func TestRateLimitCallDynamicTool(t *testing.T) {
	t.Parallel()
	h, _, _ := rateHub(t, rateYAML(t.TempDir(), "off", "dynamic",
		"      - {name: echo-rate, action: allow, tool: echo, rate: 1/10s}\n", ""))
	await.For(t, 5*time.Second, "the view", func() bool {
		g, _ := h.snapshot().view.LookupGroup("f")
		return g != nil && g.ToolRoutes["echo"].Server != nil
	})
	c := rateSession(t, h, "s1", "", `{}`)
	call := func(id int) rateAnswer {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"x"}}}}`, id))
		return decodeRate(t, c.answer(fmt.Sprint(id)))
	}
	if a := call(1); !a.passed() {
		t.Fatalf("first call: %+v", a.Error)
	}
	call(2).refused(t, "call_dynamic_tool over 1/10s", "echo-rate", 10)
}

// per: hub counts every session together, per: profile the sessions of
// one profile (those without one together), per: session (the default)
// each session alone; a session's own counters go when it ends.
func TestRateLimitScopes(t *testing.T) {
	t.Parallel()
	h, _, _ := rateHub(t, rateYAML(t.TempDir(), "off", "flat", `      - {name: hub, action: allow, tool: echo, args: {text: "hub"}, rate: 2/minute, per: hub}
      - {name: session, action: allow, tool: echo, args: {text: "session"}, rate: 2/minute}
      - {name: profile, action: allow, tool: echo, args: {text: "profile"}, rate: 2/minute, per: profile}
      - {action: allow, tool: "*"}
`, "profiles:\n  p: {groups: [f]}\n"))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	a := rateSession(t, h, "a", "", `{}`)
	b := rateSession(t, h, "b", "", `{}`)
	p := rateSession(t, h, "p", "p", `{}`)

	for i := 1; i <= 2; i++ {
		if got := echo(t, a, i, "hub"); !got.passed() {
			t.Fatalf("per: hub, call %d: %+v", i, got.Error)
		}
	}
	echo(t, b, 1, "hub").refused(t, "per: hub, another session", "hub", 30)
	echo(t, p, 1, "hub").refused(t, "per: hub, a session of a profile", "hub", 30)

	for _, c := range []*pipeClient{a, b} {
		for i := 11; i <= 12; i++ {
			if got := echo(t, c, i, "session"); !got.passed() {
				t.Fatalf("per: session, call %d: %+v", i, got.Error)
			}
		}
		echo(t, c, 13, "session").refused(t, "per: session, the 3rd of the session", "session", 30)
	}

	for i := 21; i <= 22; i++ {
		if got := echo(t, a, i, "profile"); !got.passed() {
			t.Fatalf("per: profile, call %d: %+v", i, got.Error)
		}
	}
	echo(t, b, 23, "profile").refused(t, "per: profile, another session without a profile", "profile", 30)
	for i := 24; i <= 25; i++ {
		if got := echo(t, p, i, "profile"); !got.passed() {
			t.Errorf("per: profile, the profile's own count, call %d: %+v", i, got.Error)
		}
	}

	before, _ := h.RateBuckets() // hub, a's and b's session, "" and p profile
	if before != 5 {
		t.Errorf("%d buckets, want 5", before)
	}
	a.w.Close()
	if err := <-a.done; err != nil {
		t.Fatal(err)
	}
	if after, _ := h.RateBuckets(); after != before-1 {
		t.Errorf("a session that ended left its counters: %d buckets, then %d", before, after)
	}
}

// With then: prompt a call over the limit goes to approval: the client
// is asked (it declared form elicitation), an accept lets it through, a
// decline refuses it -32001 with the reason. Within the limit nobody is
// asked.
func TestRateLimitThenPrompt(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h, _, _ := rateHub(t, rateYAML(t.TempDir(), audit, "flat",
		"      - {name: guarded, action: allow, tool: echo, rate: 1/minute, then: prompt}\n", ""))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := rateSession(t, h, "s1", "", `{"elicitation":{"form":{}}}`)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"one"}}}`)
	all := c.answerAll("1")
	if strings.Contains(all, "elicitation/create") {
		t.Errorf("asked within the limit:\n%s", all)
	}
	if a := decodeRate(t, all[strings.LastIndex(all[:len(all)-1], "\n")+1:]); !a.passed() {
		t.Fatalf("within the limit: %+v", a.Error)
	}

	// over: the question comes, and the answer decides.
	ask := func(id int, action string) rateAnswer {
		t.Helper()
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"again"}}}`, id))
		q := c.readUntil(func(line string) bool { return strings.Contains(line, `"method":"elicitation/create"`) })
		q = q[strings.LastIndex(q[:len(q)-1], "\n")+1:]
		var req struct {
			ID     json.RawMessage
			Params struct{ Message string }
		}
		mustJSON(t, q, &req)
		if !strings.Contains(req.Params.Message, "Rate limit 1/minute per session of rule guarded exceeded") || !strings.Contains(req.Params.Message, `"again"`) {
			t.Errorf("the question does not say the limit and the call: %q", req.Params.Message)
		}
		c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"` + action + `"}}`)
		return decodeRate(t, c.answer(fmt.Sprint(id)))
	}
	if a := ask(2, "accept"); !a.passed() {
		t.Errorf("over the limit, approved: %+v", a.Error)
	}
	a := ask(3, "decline")
	a.refused(t, "over the limit, declined", "guarded", 60)
	if a.Error != nil && !strings.Contains(a.Error.Message, "decline") {
		t.Errorf("the refusal does not say why: %q", a.Error.Message)
	}

	recs := readAudit(t, h, audit)
	if len(recs) != 3 {
		t.Fatalf("%d audit records, want 3", len(recs))
	}
	for i, want := range []struct{ decision, outcome string }{{"allow", "ok"}, {"rate_limited", "ok"}, {"rate_limited", "blocked"}} {
		if r := recs[i]; r.Decision != want.decision || r.Outcome != want.outcome || r.Rule != "guarded" {
			t.Errorf("record %d: decision %s outcome %s rule %s, want %s %s guarded", i+1, r.Decision, r.Outcome, r.Rule, want.decision, want.outcome)
		}
	}
}

// A reload keeps the counters of a rule whose name, group and rate stay
// the same, starts afresh for one whose rate changed, and forgets those
// of a rule that is gone.
func TestRateLimitReloadKeepsCounters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yaml := func(rate string) string {
		return rateYAML(dir, "off", "flat", "      - {name: echo-rate, action: allow, tool: echo, rate: "+rate+"}\n", "")
	}
	h, mgr, _ := rateHub(t, yaml("3/minute"))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := rateSession(t, h, "s1", "", `{}`)
	reload := func(y string) {
		t.Helper()
		cfg, err := config.Parse("test.yaml", strings.NewReader(y))
		if err != nil {
			t.Fatal(err)
		}
		mgr.Apply(cfg)
		h.SetConfig(cfg)
	}
	for i := 1; i <= 3; i++ {
		if a := echo(t, c, i, "x"); !a.passed() {
			t.Fatalf("call %d: %+v", i, a.Error)
		}
	}
	reload(yaml("3/minute"))
	echo(t, c, 4, "x").refused(t, "after a reload of the same rule", "echo-rate", 20)

	reload(yaml("4/minute"))
	for i := 5; i <= 8; i++ {
		if a := echo(t, c, i, "x"); !a.passed() {
			t.Fatalf("call %d after the rate changed to 4/minute: %+v", i, a.Error)
		}
	}
	echo(t, c, 9, "x").refused(t, "the 5th under 4/minute", "echo-rate", 15)

	reload(rateYAML(dir, "off", "flat", "      - {name: echo-rate, action: allow, tool: echo}\n", ""))
	if n, _ := h.RateBuckets(); n != 0 {
		t.Errorf("%d buckets kept for a rule that has no rate any more", n)
	}
}

// A 2026-07-28 client's retry of a call (the round of an upstream's
// elicitation answered, with the requestState the hub sealed) resumes
// the call already counted: it is not counted again, so a 1/minute rule
// lets the one call finish. A new call is counted.
func TestRateLimitCountsARetriedCallOnce(t *testing.T) {
	t.Parallel()
	h, _, _ := rateHub(t, rateYAML(t.TempDir(), "off", "flat",
		"      - {name: once, action: allow, tool: ask, rate: 1/minute}\n      - {action: allow, tool: \"*\"}\n", ""))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__ask"]; return ok })
	c := servePipes(t, h, StdioOptions{})

	c.send(modernCall("1", "f__ask", `{"elicitation":{}}`))
	round := answerOf(t, reply(c, "1"))
	if _, ok := round.InputRequests["input-1"]; !ok {
		t.Fatalf("the upstream's elicitation: %+v", round)
	}
	retry := strings.Replace(modernCall("2", "f__ask", `{"elicitation":{}}`), `"_meta":`,
		`"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+round.RequestState+`","_meta":`, 1)
	c.send(retry)
	if got := reply(c, "2"); !strings.Contains(got, "Ada") {
		t.Errorf("the retry of the call counted once: %s", got)
	}
	c.send(modernCall("3", "f__ask", `{"elicitation":{}}`))
	decodeRate(t, reply(c, "3")).refused(t, "a new call", "once", 60)
	// A requestState the hub did not seal is no way around the count.
	c.send(strings.Replace(modernCall("4", "f__ask", `{"elicitation":{}}`), `"_meta":`, `"requestState":"forged","_meta":`, 1))
	if a := decodeRate(t, reply(c, "4")); a.Error == nil {
		t.Errorf("a forged retry went through: %+v", a.Result)
	}
}

// A global rule's rate counts the calls of every group it matches, as
// the rule of no group: its counters and its count in /metrics have the
// group "", and a reload keeps them too.
func TestRateLimitGlobalRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	y := rateYAML(dir, "off", "flat", "      - {action: deny, tool: nothing}\n",
		"policy:\n  - {name: global-rate, action: log, tool: \"*\", rate: 2/minute, per: hub}\n")
	h, mgr, _ := rateHub(t, y)
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := rateSession(t, h, "s1", "", `{}`)
	for i := 1; i <= 2; i++ {
		if a := echo(t, c, i, "x"); !a.passed() {
			t.Fatalf("call %d: %+v", i, a.Error)
		}
	}
	cfg, err := config.Parse("test.yaml", strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	mgr.Apply(cfg)
	h.SetConfig(cfg)
	echo(t, c, 3, "x").refused(t, "the 3rd call, after a reload", "global-rate", 30)
	if got := h.RateLimited()[""]["global-rate"]; got != 1 {
		t.Errorf("RateLimited of the global rule: %d, want 1 (%v)", got, h.RateLimited())
	}
}

// A 2026-07-28 client over a rate: rule with then: prompt is asked in an
// input_required answer (a server sends it no requests); the retry that
// accepts goes through, with the upstream's answer, and a decline is
// refused -32001 with the reason.
func TestRateLimitThenPromptModernClient(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	h, _, _ := rateHub(t, rateYAML(t.TempDir(), audit, "flat",
		"      - {name: guarded, action: allow, tool: echo, rate: 1/minute, then: prompt}\n", ""))
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	caps := `{"elicitation":{}}`
	c.send(echoCall("1", "one", caps, ""))
	if got := answerOf(t, reply(c, "1")); got.ResultType == "input_required" || len(got.Content) != 1 || got.Content[0].Text != "one" {
		t.Fatalf("within the limit: %+v", got)
	}
	c.send(echoCall("2", "two", caps, ""))
	first := answerOf(t, reply(c, "2"))
	key := promptKey(t, first, `tools/call "echo" on f`)
	c.send(echoCall("3", "two", caps, retryWith(key, "accept", first.RequestState)))
	if got := answerOf(t, reply(c, "3")); got.ResultType == "input_required" || len(got.Content) != 1 || got.Content[0].Text != "two" {
		t.Fatalf("over the limit, accepted: %+v", got)
	}
	c.send(echoCall("4", "three", caps, ""))
	first = answerOf(t, reply(c, "4"))
	c.send(echoCall("5", "three", caps, retryWith(promptKey(t, first, `tools/call "echo"`), "decline", first.RequestState)))
	if code, msg := refusal(t, reply(c, "5")); code != codePolicyBlocked || !strings.Contains(msg, "Rate limit 1/minute") || !strings.Contains(msg, "decline") {
		t.Errorf("over the limit, declined: %d %s", code, msg)
	}
}
