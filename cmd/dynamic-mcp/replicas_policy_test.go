package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// policyReplicaConfig is the config of TestReplicasSharePolicyState's
// replicas: the fake upstream in flat mode on the store at storeURL, ids
// sealed under $DYNAMIC_MCP_SESSION_KEY, echo limited to 3 calls an hour
// (per session, the default; an hour, not a minute, whose bucket a busy
// machine refilled between the calls) for text "rate*" and asking a
// person for text "ask*".
func policyReplicaConfig(t testing.TB, storeURL string) string {
	t.Helper()
	cfg := fmt.Sprintf(`store: %q
mode: flat
http:
  session_keys: ["${DYNAMIC_MCP_SESSION_KEY}"]
settings: { prompt_timeout: 60s }
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: echo-rate, action: allow, tool: echo, args: { text: "rate*" }, rate: 3/hour }
      - { name: ask-echo, action: prompt, tool: echo, args: { text: "ask*" }, description: "echo needs a person" }
      - { action: allow, tool: "*" }
`, storeURL, fakeBin)
	return writeConfig(t, cfg)
}

// Three replicas of the hub on one PostgreSQL store (store:) with the same
// http.session_keys, behind Debian's nginx balancing round-robin (no
// hashing: each request of a session goes to the next replica), and the
// official TypeScript SDK client over Streamable HTTP, which declares no
// elicitation (testdata/sdkclient/calls.mjs):
//
//   - rate: 3/hour: three calls pass, spread over the replicas; each
//     call after them is refused -32001 with retryAfter, on every replica
//     that takes one (each replica's /metrics counts its refusals);
//   - a prompt rule sends the call to the approval inbox: every replica's
//     inspector lists it; approved on a replica other than the one where
//     it waits, the client's call completes; another, denied on another
//     replica, gives the client the denial; a grant made on one replica
//     lets the next calls through on every replica.
//
// Without store: each replica counts and holds its own, and this fails.
func TestReplicasSharePolicyState(t *testing.T) {
	t.Parallel()
	nginxBinary(t)
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	began := time.Now()
	path := policyReplicaConfig(t, pgtest.Start(t))
	replicas, addrs := startReadyReplicas(t, 3, func() *hubReplica { return startReplica(t, path) })
	uiTokens := make([]string, len(replicas))
	for i, r := range replicas {
		uiTokens[i] = uiToken(t, r.stderr)
	}
	n := startNginxReplicas(t, addrs, true)
	c := startSDKCalls(t, n)
	t.Logf("three replicas, PostgreSQL, nginx and the client ready in %s", time.Since(began).Round(time.Millisecond))

	t.Run("rate", func(t *testing.T) {
		for i := 1; i <= 3; i++ {
			if a := c.call(t, fmt.Sprintf("rate %d", i)); a.Text != fmt.Sprintf("rate %d", i) || a.IsError {
				t.Fatalf("call %d of 3/hour: %+v", i, a)
			}
		}
		allowed := metricByReplica(t, replicas, `dynamic_mcp_policy_decisions_total\{action="allow",group="f",rule="echo-rate"\}`)
		t.Logf("the three calls within the rate, by replica: %v", allowed)
		if spread := len(slices.DeleteFunc(slices.Clone(allowed), func(n int) bool { return n == 0 })); spread < 2 {
			t.Errorf("the calls within the rate reached %d replica(s): %v", spread, allowed)
		}
		// Round-robin: three calls in a row reach the three replicas.
		for i := 4; i <= 12 && !allRefused(t, replicas); i++ {
			a := c.call(t, fmt.Sprintf("rate %d", i))
			if a.Code != -32001 || a.Data.Rule != "echo-rate" || a.Data.Action != "rate" || a.Data.RetryAfter < 1 || a.Data.RetryAfter > 1200 ||
				!strings.Contains(a.Message, "Rate limit 3/hour per session of rule echo-rate exceeded") {
				t.Fatalf("call %d of 3/hour: %+v, want -32001 with retryAfter", i, a)
			}
		}
		if !allRefused(t, replicas) {
			t.Error("the refused calls did not reach every replica")
		}
	})

	t.Run("approvals", func(t *testing.T) {
		api := func(i int, method, path, body string) (int, []byte) {
			t.Helper()
			req, _ := http.NewRequest(method, "http://"+replicas[i].addr+"/ui/api/"+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+uiTokens[i])
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		// pending waits until every replica lists one call waiting, the
		// same, with text, and returns it and the replica it waits on.
		pending := func(text string) (approval.Pending, int) {
			t.Helper()
			var p approval.Pending
			for i := range replicas {
				var q approval.Pending
				await.Costly(t, 10*time.Second, fmt.Sprintf("replica %d to list the call %q waiting", i, text), func() bool {
					var l approval.List
					code, b := api(i, "GET", "approvals", "")
					if code != http.StatusOK || json.Unmarshal(b, &l) != nil || len(l.Pending) != 1 {
						return false
					}
					q = l.Pending[0]
					return strings.Contains(string(q.Arguments), text)
				})
				if i > 0 && (q.ID != p.ID || q.Replica != p.Replica) {
					t.Errorf("replica %d lists %s at %s, replica 0 %s at %s", i, q.ID, q.Replica, p.ID, p.Replica)
				}
				p = q
			}
			// The replica where the call waits logs it; the others may list
			// it from the store before that line reaches its stderr.
			waits := regexp.MustCompile(`msg="policy: call waits for approval" id=` + regexp.QuoteMeta(p.ID) + ` `)
			at := -1
			await.Costly(t, 10*time.Second, "a replica to log that "+p.ID+" waits on it", func() bool {
				for i, r := range replicas {
					if waits.MatchString(r.stderr.String()) {
						at = i
						return true
					}
				}
				return false
			})
			return p, at
		}
		// answeredElsewhere checks that replica i sent the answer to id to
		// the replica where it waits.
		answeredElsewhere := func(i int, id string) {
			t.Helper()
			await.Costly(t, 10*time.Second, fmt.Sprintf("replica %d to log that it sent its answer to %s to another replica", i, id), func() bool {
				return strings.Contains(replicas[i].stderr.String(), `msg="approval: answer sent to the replica where the call waits" id=`+id)
			})
		}

		first := c.start(t, "ask one")
		p, at := pending("ask one")
		if p.Tool != "echo" || p.Rule != "ask-echo" || p.Client != "calls.mjs" || p.Replica == "" {
			t.Errorf("the call waiting: %+v", p)
		}
		other := (at + 1) % len(replicas)
		if code, b := api(other, "POST", "approvals/"+p.ID+"/approve", ""); code != http.StatusOK {
			t.Fatalf("approve on replica %d of the call waiting on %d: %d %s", other, at, code, b)
		}
		if a := c.wait(t, first); a.Text != "ask one" || a.IsError {
			t.Errorf("the call approved on another replica: %+v", a)
		}
		answeredElsewhere(other, p.ID)

		second := c.start(t, "ask two")
		p, at = pending("ask two")
		other = (at + 2) % len(replicas)
		if code, b := api(other, "POST", "approvals/"+p.ID+"/deny", ""); code != http.StatusNoContent {
			t.Fatalf("deny on replica %d of the call waiting on %d: %d %s", other, at, code, b)
		}
		if a := c.wait(t, second); a.Code != -32001 || !strings.Contains(a.Message, "denied by ui") {
			t.Errorf("the call denied on another replica: %+v", a)
		}
		answeredElsewhere(other, p.ID)

		// The approval commands on a machine where no hub of the config
		// runs (a state dir of their own) reach the inbox on the store.
		cli := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(hubBin, append(args, "-c", path)...)
			cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir(), "DYNAMIC_MCP_SESSION_KEY="+testSessionKey)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("dynamic-mcp %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		viaCLI := c.start(t, "ask cli")
		p, _ = pending("ask cli")
		var l approval.List
		if out := cli("approvals", "--json"); json.Unmarshal([]byte(out), &l) != nil || len(l.Pending) != 1 || l.Pending[0].ID != p.ID || l.Pending[0].Replica != p.Replica {
			t.Fatalf("dynamic-mcp approvals --json on the store: %s, want %s at %s", out, p.ID, p.Replica)
		}
		if out := cli("approvals"); !strings.Contains(out, p.ID) || !strings.Contains(out, "@ "+p.Replica) {
			t.Errorf("dynamic-mcp approvals on the store:\n%s", out)
		}
		if out := cli("approve", p.ID); !strings.Contains(out, "approved "+p.ID) {
			t.Errorf("dynamic-mcp approve on the store: %s", out)
		}
		if a := c.wait(t, viaCLI); a.Text != "ask cli" || a.IsError {
			t.Errorf("the call approved by dynamic-mcp approve: %+v", a)
		}

		third := c.start(t, "ask three")
		p, at = pending("ask three")
		other = (at + 1) % len(replicas)
		code, b := api(other, "POST", "approvals/"+p.ID+"/approve", `{"for":"1m"}`)
		var approved struct{ Grant approval.Grant }
		if code != http.StatusOK || json.Unmarshal(b, &approved) != nil || approved.Grant.ID == "" {
			t.Fatalf("approve with a grant on replica %d: %d %s", other, code, b)
		}
		if a := c.wait(t, third); a.Text != "ask three" {
			t.Errorf("the call approved with a grant: %+v", a)
		}
		// The grant is made where the call waited, under the id the
		// answer named: every replica lists it.
		var grant approval.Grant
		for i := range replicas {
			await.Costly(t, 10*time.Second, fmt.Sprintf("replica %d to list the grant", i), func() bool {
				var l approval.List
				code, b := api(i, "GET", "approvals", "")
				if code != http.StatusOK || json.Unmarshal(b, &l) != nil || len(l.Grants) != 1 || len(l.Pending) != 0 {
					return false
				}
				grant = l.Grants[0]
				return true
			})
		}
		if grant.ID != approved.Grant.ID || grant.Tool != "echo" || grant.ApprovedBy != "ui" || approved.Grant.Tool != "echo" {
			t.Errorf("the grant listed %+v, the answer to approve %+v", grant, approved.Grant)
		}
		// The next calls, one on each replica, pass under the grant.
		for i := 4; i <= 6; i++ {
			text := fmt.Sprintf("ask %d", i)
			if a := c.wait(t, c.start(t, text)); a.Text != text || a.IsError {
				t.Errorf("call %q under the grant: %+v", text, a)
			}
		}
		// The replica logs the call it let through as it answers it, and
		// its stderr reaches this process through a pipe: the line may
		// come after the answer, so it is waited for.
		used := regexp.MustCompile(`msg="policy: call let through by a grant" grant=` + regexp.QuoteMeta(grant.ID))
		for i, r := range replicas {
			await.Costly(t, 10*time.Second, fmt.Sprintf("replica %d to let a call through under the grant made on replica %d", i, other), func() bool {
				return used.MatchString(r.stderr.String())
			})
		}
	})
	t.Logf("the whole test took %s", time.Since(began).Round(time.Millisecond))
}

// metricByReplica is, for each replica, the value of the first series of
// its /metrics that series (a regexp of the name and labels) matches, 0
// when none does.
func metricByReplica(t *testing.T, replicas []*hubReplica, series string) []int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + series + ` (\d+)`)
	hc := &http.Client{Transport: authorized{testClient.Transport}}
	out := make([]int, len(replicas))
	for i, r := range replicas {
		resp, err := hc.Get("http://" + r.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := re.FindSubmatch(b); m != nil {
			out[i], _ = strconv.Atoi(string(m[1]))
		}
	}
	return out
}

// allRefused reports whether every replica's /metrics counts a call of
// rule echo-rate refused.
func allRefused(t *testing.T, replicas []*hubReplica) bool {
	t.Helper()
	return !slices.Contains(metricByReplica(t, replicas, `dynamic_mcp_rate_limited_total\{[^}]*rule="echo-rate"[^}]*\}`), 0)
}

// sdkCalls is calls.mjs, running until the test ends.
type sdkCalls struct {
	stdin   io.Writer
	mu      sync.Mutex // guards answers
	answers map[string]chan sdkAnswer
	next    int
}

// sdkAnswer is a line calls.mjs prints for a call.
type sdkAnswer struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	IsError     bool   `json:"isError"`
	Code        int    `json:"code"`
	Message     string `json:"message"`
	SameSession bool   `json:"sameSession"`
	Data        struct {
		Rule       string  `json:"rule"`
		Action     string  `json:"action"`
		RetryAfter float64 `json:"retryAfter"`
	} `json:"data"`
}

// startSDKCalls starts calls.mjs against nginx's /mcp and returns once it
// has initialized and sees the fake's echo.
func startSDKCalls(t *testing.T, n *nginx) *sdkCalls {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	node := startNodeScript(t, ctx, n.caFile, "calls.mjs", "--url", n.https+"/mcp", "--token", testToken)
	c := &sdkCalls{stdin: node.stdin, answers: map[string]chan sdkAnswer{}}
	ready := make(chan string, 1)
	done := make(chan struct{})
	go func() { // ends when node exits and its stdout closes
		defer close(done)
		for line := range node.lines {
			var head struct {
				Ready *bool
				ID    string
			}
			if json.Unmarshal([]byte(line), &head) != nil {
				continue
			}
			if head.Ready != nil {
				ready <- line
				continue
			}
			var a sdkAnswer
			json.Unmarshal([]byte(line), &a)
			c.mu.Lock()
			ch := c.answers[a.ID]
			c.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
	}()
	t.Cleanup(func() {
		node.stdin.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cancel()
			<-done
		}
		node.stop(t)
		cancel()
	})
	select {
	case line := <-ready:
		if !strings.Contains(line, `"ready":true`) {
			t.Fatalf("calls.mjs: %s", line)
		}
	case <-done:
		t.Fatalf("calls.mjs exited: %s", node.stderr)
	case <-time.After(60 * time.Second):
		t.Fatal("calls.mjs did not get ready")
	}
	return c
}

// start asks for a call of echo with text; wait waits for its answer.
func (c *sdkCalls) start(t *testing.T, text string) chan sdkAnswer {
	t.Helper()
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan sdkAnswer, 1)
	c.answers[id] = ch
	c.mu.Unlock()
	line, _ := json.Marshal(map[string]string{"id": id, "text": text})
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	return ch
}

func (c *sdkCalls) wait(t *testing.T, ch chan sdkAnswer) sdkAnswer {
	t.Helper()
	select {
	case a := <-ch:
		if !a.SameSession {
			t.Errorf("the client's session changed: %+v", a)
		}
		return a
	case <-time.After(45 * time.Second):
		t.Fatal("the call was not answered")
		return sdkAnswer{}
	}
}

// call makes a call and waits for its answer.
func (c *sdkCalls) call(t *testing.T, text string) sdkAnswer {
	t.Helper()
	return c.wait(t, c.start(t, text))
}
