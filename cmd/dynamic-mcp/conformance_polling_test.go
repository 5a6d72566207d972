package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// TestConformanceSSEPollingThroughHub runs the conformance suite's SSE
// polling scenarios (SEP-1699) with the hub in the middle, both ways:
//
//   - server-sse-polling, the suite as the client of the hub over HTTP,
//     whose one upstream is a server made with the official TypeScript SDK
//     that polls (testdata/sdkclient/pollingserver.mjs): its
//     test_reconnection closes the answer stream before answering, and
//     the hub must resume it with Last-Event-ID to answer the suite;
//   - sse-retry, the suite's own polling server as the hub's upstream,
//     driven through the hub over stdio by the official TypeScript SDK
//     client (testdata/sdkclient/callthrough.mjs): the suite checks that
//     the hub resumed with GET and Last-Event-ID after the retry time.
func TestConformanceSSEPollingThroughHub(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a while; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceRelease)
	env := append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
	scripts := filepath.Join(repoDir, "testdata", "sdkclient")

	t.Run("server-sse-polling", func(t *testing.T) {
		upstreamURL := startPollingServer(t, filepath.Join(node22, "node"), filepath.Join(scripts, "pollingserver.mjs"))
		base, hubLog := startPlainHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  polling:
    description: a server that ends its answer streams early
    url: %s
    prefix: false
`, upstreamURL), "--insecure-no-auth")
		c := httpClient(t, base, map[string]string{})
		c.initialize("2025-11-25")
		c.waitFlatTools(1)
		cmd := exec.Command(filepath.Join(node22, "node"), suite, "server", "--url", base+"/mcp", "--scenario", "server-sse-polling", "--verbose")
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		// The hub answers the suite's call whole (as JSON), so the suite
		// has no stream of the hub's to resume: what it checks is that the
		// call is answered and fails nothing.
		if !regexp.MustCompile(`(?m)^Passed: \d+/\d+, 0 failed`).Match(out) || !strings.Contains(string(out), "Received 200 response for POST") {
			t.Errorf("server-sse-polling through the hub:\n%s", out)
		}
		if !strings.Contains(hubLog.String(), "resuming an answer stream the server ended") {
			t.Errorf("the hub did not resume its upstream's answer stream; its log:\n%s", hubLog.String())
		}
		// The answer is the upstream's, delivered on the stream the hub
		// resumed.
		res := c.call("tools/call", map[string]any{"name": "test_reconnection", "arguments": map[string]any{}})
		if text, isErr := toolText(t, res); isErr || text != "Reconnection test completed successfully" {
			t.Errorf("test_reconnection through the hub: %s", res)
		}
	})

	t.Run("sse-retry", func(t *testing.T) {
		// The suite runs the client with its server's URL as the last
		// argument: the hub is configured with it, and started by the SDK
		// client over stdio.
		dir := t.TempDir()
		client := filepath.Join(dir, "client")
		script := fmt.Sprintf(`#!/bin/sh
for url; do :; done
printf 'mode: flat\ngroups:\n  retry:\n    description: the suite server\n    url: %%s\n    prefix: false\n' "$url" > %[1]s/hub.yaml
exec node %[2]s --hub '["%[3]s","serve","--standalone","-c","%[1]s/hub.yaml","--log-level","debug"]' --tool test_reconnection --want "Reconnection test completed successfully"
`, dir, shellQuote(filepath.Join(scripts, "callthrough.mjs")), hubBin)
		if err := os.WriteFile(client, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		run := func() []byte {
			cmd := exec.Command(filepath.Join(node22, "node"), suite, "client", "--command", client, "--scenario", "sse-retry", "--verbose", "--timeout", clientTimeoutMS())
			cmd.Env = append(env, "DYNAMIC_MCP_HOME="+t.TempDir())
			out, _ := cmd.CombinedOutput()
			return out
		}
		out := run()
		for try := 1; try <= 3 && reconnectedSlightlyLate(out); try++ {
			t.Logf("sse-retry: the hub reconnected %s ms after the stream ended, for a retry of 500 ms: over the suite's fixed 200 ms tolerance, under its 2x that says the retry was ignored; run again (try %d)",
				sseRetryDelay.FindSubmatch(out)[1], try)
			out = run()
		}
		for _, check := range []string{"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"} {
			if m := sseCheckStatus(out, check); m != "SUCCESS" {
				t.Errorf("check %s through the hub: %q", check, m)
			}
		}
		if m := regexp.MustCompile(`(?m)^Passed: (\d+)/(\d+), 0 failed, 0 warnings`).FindSubmatch(out); m == nil || string(m[1]) != string(m[2]) {
			t.Errorf("sse-retry through the hub:\n%s", out)
		}
	})
}

// sseCheckStatus is the status of the check id in the suite's verbose
// output out, "" when it has none.
func sseCheckStatus(out []byte, id string) string {
	if m := regexp.MustCompile(`"id": "` + id + `",[^{]*?"status": "(\w+)"`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// sseRetryDelay is the delay the suite measured from the end of the
// call's stream to the GET that resumed it.
var sseRetryDelay = regexp.MustCompile(`"actualDelayMs": (\d+)`)

// reconnectedSlightlyLate reports whether the sse-retry run out failed
// only on the suite's fixed tolerance of its timing check: reconnected
// within 2x the retry (the hub does wait the retry it was given:
// transport/resume.go, alone 502-508 ms at load 90-106) but more than
// 200 ms after it, which a loaded machine's scheduling alone can take
// (seen: 904 ms at load 37). Too early, or 2x late, is no such case.
func reconnectedSlightlyLate(out []byte) bool {
	return sseCheckStatus(out, "client-sse-retry-timing") == "WARNING" && sseRetryDelay.Match(out) &&
		sseCheckStatus(out, "client-sse-graceful-reconnect") == "SUCCESS" && sseCheckStatus(out, "client-sse-last-event-id") == "SUCCESS"
}

// startPollingServer starts testdata/sdkclient/pollingserver.mjs until
// the test ends and returns its URL.
func startPollingServer(t *testing.T, node, script string) string {
	t.Helper()
	cmd := exec.Command(node, script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				found <- url
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(30 * time.Second * await.Slow): // bounds a hang: node took longer than 30 s to start at load 100
		t.Fatal("the polling server did not listen")
		return ""
	}
}
