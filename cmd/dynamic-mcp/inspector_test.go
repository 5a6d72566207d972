package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// chromium is the browser the inspector's test drives: Debian's chromium,
// which CI installs (.ci/run). Without it the test is skipped, except in
// CI, where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	const path = "/usr/bin/chromium"
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing: CI installs it in .ci/run", path)
	}
	t.Skipf("%s is missing (apt-get install chromium)", path)
	return ""
}

// browse gives the test a tab of the package's one headless Chromium in
// a browser context of its own: cookies, storage and cache apart from every
// other test's, as a fresh profile gave them. The browser is started by
// the first test that browses and stopped when the tests end
// (stopBrowser): a start is seconds of CPU on a loaded machine, once
// instead of once a test.
func browse(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	theBrowser.once.Do(func() { startBrowser(path) })
	if theBrowser.err != nil {
		t.Fatalf("start %s: %v", path, theBrowser.err)
	}
	ctx, cancel := chromedp.NewContext(theBrowser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := openTarget(ctx); err != nil {
		t.Fatalf("open a tab in a browser context of the test's own: %v", err)
	}
	return ctx
}

// openTarget runs ctx's first action, which starts its browser or opens
// its tab, either of which lives as long as ctx: it gets no deadline of
// its own (that would close it again), so one that hangs is given up on
// here, after a minute.
func openTarget(ctx context.Context) error {
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		return err
	case <-time.After(time.Minute):
		return errors.New("not open within a minute")
	}
}

// theBrowser is the package's headless Chromium (browse).
var theBrowser struct {
	once sync.Once
	ctx  context.Context // the browser's first tab; NewContext of it opens others
	err  error           // why it did not start
	stop func()          // stops it and removes its profile
}

// startBrowser starts the package's Chromium at path: a profile of its
// own, and nothing that reaches for the network on its own (without
// those flags it hangs where there is no network).
func startBrowser(path string) {
	profile, err := os.MkdirTemp("", "dynamic-mcp-chromium")
	if err != nil {
		theBrowser.err = err
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		// Its temporary files (the singleton's socket directory,
		// org.chromium.Chromium.*, which a browser that is killed leaves
		// behind) under the profile, removed with it.
		chromedp.Env("TMPDIR="+profile),
		chromedp.WindowSize(1400, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	theBrowser.ctx = ctx
	theBrowser.stop = func() { cancelBrowser(); cancelAlloc(); os.RemoveAll(profile) }
	theBrowser.err = openTarget(ctx)
}

// stopBrowser stops the package's Chromium, if a test started it.
func stopBrowser() {
	if theBrowser.stop != nil {
		theBrowser.stop()
	}
}

// browserDo runs browser actions, bounded, failing the test with what was being
// done. The actions wait for the page (WaitVisible): their bound,
// clientTimeout, only ends a hang; 30 s ran out for the first page at a
// load of 60-95.
func browserDo(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// browserGet runs one browser action that gives a value, bounded as
// browserDo's.
func browserGet[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

type css = chromedp.CSS

// untilTrue waits until the JavaScript expression is true in the page,
// evaluated whole each time: the page renders its tables anew on every
// event (an upstream's retries, a client's calls), and a wait for a node
// followed by a read of it failed under load when the row was replaced
// in between ("No node with given id found", or a wait on a node no
// longer in the page until its deadline).
func untilTrue(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(25*time.Second))(ctx, tg)
		return err
	})
}

// The inspector, in a real browser: it asks for the token, shows calls
// live with their method, group, status and policy decision, opens a row
// to its messages' JSON (secrets redacted), shows a blocked call's rule,
// and an upstream that was killed as down with its reason.
func TestInspectorInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browse(t)
	dir := t.TempDir()
	// The victim runs the fake upstream until the stop file exists; then
	// it cannot start, and says why on stderr.
	pidFile, stopFile, victim := filepath.Join(dir, "victim.pid"), filepath.Join(dir, "stop"), filepath.Join(dir, "victim.sh")
	script := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then echo 'victim: cannot start: the license server is unreachable' >&2; exit 1; fi\necho $$ > %q\nexec %q -name victim\n",
		stopFile, pidFile, fakeBin)
	if err := os.WriteFile(victim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	base, stderr := startHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  files:
    description: A fake file server
    command: %q
    args: ["-conformance"]
    policy:
      - {name: no-etc, action: deny, tool: echo, args: {text: "/etc/**"}, description: "nothing under /etc"}
  victim:
    description: A server that will be killed
    command: %q
    retry: {initial_interval: 100ms}
`, fakeBin, victim))
	c := httpClient(t, base, nil)
	c.initialize("2025-11-25")
	c.waitFlatTools(2 * fakeTools)

	token := uiToken(t, stderr)
	browserDo(t, ctx, "open /ui and give the token",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), token),
		chromedp.Click(css("#login-form button")),
		chromedp.WaitVisible(css("#conn.live")),
	)
	stored := browserGet(t, ctx, "read the token kept", chromedp.Evaluate[string](`sessionStorage.getItem("dynamic-mcp-inspector-token")`))
	url := browserGet(t, ctx, "read the URL", chromedp.Location())
	if stored != token || strings.Contains(url, token) {
		t.Errorf("token kept as %q, URL %s", stored, url)
	}

	// The page is open and live: these calls must appear without a reload.
	c.call("tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "hello from the test", "api_key": "sk-live-123"}})
	c.call("tools/call", map[string]any{"name": "files__test_tool_with_progress", "_meta": map[string]any{"progressToken": "p1"}})
	c.call("tools/call", map[string]any{"name": "victim__echo", "arguments": map[string]any{"text": "still up"}})
	if _, rpcErr := c.request("tools/call", map[string]any{"name": "files__fail"}); rpcErr == nil {
		t.Fatal("fail did not fail")
	}
	if _, rpcErr := c.request("tools/call", map[string]any{"name": "files__nope"}); rpcErr == nil {
		t.Fatal("a tool that does not exist was found")
	}
	if _, rpcErr := c.request("tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "/etc/passwd"}}); rpcErr == nil || rpcErr.Code != -32001 {
		t.Fatalf("the policy did not block: %+v", rpcErr)
	}

	echoRow := `tr.row[data-method="tools/call"][data-group="files"][data-status="ok"][data-target="echo"]`
	blockedRow := `tr.row[data-method="tools/call"][data-group="files"][data-status="blocked"]`
	browserDo(t, ctx, "wait for the rows",
		chromedp.WaitVisible(css(echoRow)),
		chromedp.WaitVisible(css(`tr.row[data-target="test_tool_with_progress"][data-status="ok"]`)),
		chromedp.WaitVisible(css(`tr.row[data-group="victim"][data-status="ok"]`)),
		chromedp.WaitVisible(css(`tr.row[data-target="fail"][data-status="error"]`)),
		chromedp.WaitVisible(css(`tr.row[data-target="files__nope"][data-status="not_found"]`)),
		chromedp.WaitVisible(css(blockedRow)),
	)
	policy := browserGet(t, ctx, "read the blocked row's policy", chromedp.Text(css(blockedRow+" td.policy")))
	target := browserGet(t, ctx, "read the blocked row's tool", chromedp.Text(css(blockedRow+" td.target")))
	if !strings.Contains(policy, "deny") || !strings.Contains(policy, "no-etc") || target != "echo" {
		t.Errorf("blocked row: policy %q, tool %q", policy, target)
	}
	if p := browserGet(t, ctx, "read the echo's policy", chromedp.Text(css(echoRow+" td.policy"))); !strings.Contains(p, "allow") {
		t.Errorf("allowed row: policy %q", p)
	}

	// The allowed echo opens to its messages, pretty-printed, redacted.
	browserDo(t, ctx, "open the echo",
		chromedp.Click(css(echoRow+" td.target")),
		chromedp.WaitVisible(css(`tr.detail pre.json`)))
	echoDetail := browserGet(t, ctx, "read the echo's detail", chromedp.Text(css(`tr.detail`)))
	for _, want := range []string{`"name": "files__echo"`, `"api_key": "[redacted]"`, "Policy decision", "allow", "→ files/files",
		"protocol 2025-11-25", `"text": "hello from the test"`} {
		if !strings.Contains(echoDetail, want) {
			t.Errorf("the echo's detail lacks %q:\n%s", want, echoDetail)
		}
	}
	if strings.Contains(echoDetail, "sk-live-123") {
		t.Errorf("the api_key is shown:\n%s", echoDetail)
	}
	// Closed again, and the blocked call opened: its rule is there.
	browserDo(t, ctx, "open the blocked call",
		chromedp.Click(css(echoRow+" td.target")),
		chromedp.WaitNotPresent(css(`tr.detail`)),
		chromedp.Click(css(blockedRow+" td.target")),
		chromedp.WaitVisible(css(`tr.detail pre.json`)))
	blockedDetail := browserGet(t, ctx, "read the blocked call's detail", chromedp.Text(css(`tr.detail`)))
	for _, want := range []string{"rule no-etc", `"code": -32001`, `"message": "nothing under /etc"`, `"rule": "no-etc"`, `"action": "deny"`} {
		if !strings.Contains(blockedDetail, want) {
			t.Errorf("the blocked call's detail lacks %q:\n%s", want, blockedDetail)
		}
	}
	screenshot(t, ctx, "inspector-blocked.png")

	// Kill the victim for good: it is shown down, with the reason its
	// stderr gave.
	pid := readPID(t, pidFile)
	if err := os.WriteFile(stopFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	down := `tr.server[data-server="victim"][data-state="failed"] .reason`
	browserDo(t, ctx, "see the victim down",
		chromedp.Click(css(`#tabs button[data-tab="upstreams"]`)),
		untilTrue(`(() => { const r = document.querySelector('`+down+`'); return r !== null && r.offsetParent !== null && r.textContent.includes("cannot start") })()`))
	reason := browserGet(t, ctx, "read the reason", chromedp.Evaluate[string](`document.querySelector('`+down+`').innerText`))
	files := browserGet(t, ctx, "read the files server's state", chromedp.AttributeValue(css(`tr.server[data-server="files"]`), "data-state"))
	if !strings.Contains(reason, "victim: cannot start: the license server is unreachable") || files.Value != "ready" {
		t.Errorf("victim down because %q; files %q", reason, files.Value)
	}
	screenshot(t, ctx, "inspector-upstreams.png")

	browserDo(t, ctx, "see the client",
		chromedp.Click(css(`#tabs button[data-tab="clients"]`)),
		untilTrue(`(() => { const r = document.querySelector('tr.session'); return r !== null && r.offsetParent !== null })()`))
	client := browserGet(t, ctx, "read the client", chromedp.Evaluate[string](`document.querySelector('tr.session').innerText`))
	if !strings.Contains(client, "dynamic-mcp-test 1") || !strings.Contains(client, "streamable-http") {
		t.Errorf("client row %q", client)
	}

	// docs/inspector.md's picture: the traffic, with the echo open on both legs.
	browserDo(t, ctx, "open the echo again",
		chromedp.Click(css(`#tabs button[data-tab="traffic"]`)),
		chromedp.Click(css(blockedRow+" td.target")),
		chromedp.WaitNotPresent(css(`tr.detail`)),
		chromedp.Click(css(echoRow+" td.target")),
		chromedp.WaitVisible(css(`tr.detail pre.json`)))
	screenshot(t, ctx, "inspector.png")

	// Filters: by status, the blocked call alone.
	statuses := browserGet(t, ctx, "filter by status", chromedp.Evaluate[string](`(() => {
		const s = document.querySelector('#f-status');
		s.value = 'blocked';
		s.dispatchEvent(new Event('change'));
		const got = [...document.querySelectorAll('tr.row')].map((r) => r.dataset.status).join(',');
		s.value = '';
		s.dispatchEvent(new Event('change'));
		return got;
	})()`))
	if statuses != "blocked" {
		t.Errorf("rows shown with the status filter blocked: %q", statuses)
	}

	// Pause: what comes meanwhile is counted, not shown, even when a row
	// is opened or a filter changed; Resume shows it.
	rowCount := `document.querySelectorAll('tr.row').length`
	before := browserGet(t, ctx, "count the rows", chromedp.Evaluate[int](rowCount))
	browserDo(t, ctx, "pause", chromedp.Click(css(`#pause`)), chromedp.WaitVisible(css(`#paused-note`)))
	c.call("tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "while paused"}})
	browserDo(t, ctx, "see the call counted while paused",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.querySelector('#paused-note').textContent !== '0 new'`,
				chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return err
		}),
		chromedp.Click(css(blockedRow+" td.target")),
		chromedp.WaitVisible(css(`tr.detail pre.json`)))
	if during := browserGet(t, ctx, "count the rows while paused", chromedp.Evaluate[int](rowCount)); during != before {
		t.Errorf("%d rows shown while paused, %d before", during, before)
	}
	browserDo(t, ctx, "resume", chromedp.Click(css(`#pause`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](rowCount+` > `+strconv.Itoa(before), chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return err
		}))
}

// screenshot saves the page as a test artifact (go test -artifacts keeps
// it); with -update inspector.png also becomes docs/inspector.md's.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := browserGet(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if *update && name == "inspector.png" {
		if err := os.WriteFile(filepath.Join(repoDir, "docs", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// uiToken is the inspector's own token, as serve --http gives it where
// stderr is not a terminal: in the file a log record names, with the
// page's URL (uitoken.go).
func uiToken(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`its token for this run is in the file" url=http://\S+/ui/ file=(\S+)\n`)
	var m []string
	await.Costly(t, 10*time.Second, "the inspector's token file on stderr", func() bool {
		m = re.FindStringSubmatch(stderr.String())
		return m != nil
	})
	if strings.Contains(stderr.String(), "token for this run:") {
		t.Fatalf("the inspector's token printed to stderr, which is no terminal:\n%s", stderr)
	}
	fi, err := os.Stat(m[1])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the inspector's token file %s: %v %v, want mode 0600", m[1], fi.Mode(), err)
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	if token == testToken || len(token) < 32 {
		t.Fatalf("the inspector's token %q", token)
	}
	if strings.Contains(stderr.String(), token) {
		t.Fatal("the inspector's token is on stderr")
	}
	return token
}

// serve --ui serves the inspector alone, for a hub on stdio: on loopback
// only, with a token of its own printed to stderr, the page open and its
// API and the metrics behind the token.
func TestServeUI(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("groups:\n  files: {description: fake, command: %q}\n", fakeBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(hubBin, "serve", "-c", path, "--ui", "0.0.0.0:0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "loopback address only") {
		t.Errorf("--ui on all interfaces: %v\n%s", err, out)
	}

	cmd := exec.Command(hubBin, "serve", "-c", path, "--ui", "0")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	at := regexp.MustCompile(`the inspector is at (http://127\.0\.0\.1:\d+/ui/)`)
	var page, token string
	for page == "" || token == "" {
		if !lines.Scan() {
			t.Fatalf("no URL and token on stderr: %v", lines.Err())
		}
		if m := at.FindStringSubmatch(lines.Text()); m != nil {
			page = m[1]
		}
		if tok, ok := strings.CutPrefix(strings.TrimSpace(lines.Text()), "token for this run: "); ok {
			token = tok
		}
	}
	go io.Copy(io.Discard, stderr)

	get := func(url, token string, header ...string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
			} else {
				req.Header.Set(header[i], header[i+1])
			}
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	root := strings.TrimSuffix(page, "/ui/")
	metrics := root + "/metrics"
	for _, tc := range []struct {
		url, token string
		want       int
	}{
		{page, "", http.StatusOK},
		{page + "app.js", "", http.StatusOK},
		{page + "api/upstreams", "", http.StatusUnauthorized},
		{page + "api/upstreams", "wrong", http.StatusUnauthorized},
		{page + "api/upstreams", token, http.StatusOK},
		{page + "api/clients", token, http.StatusOK},
		{metrics, "", http.StatusUnauthorized},
		{metrics, token, http.StatusOK},
		{root + "/healthz", "", http.StatusOK},
		{root + "/readyz", "wrong", http.StatusUnauthorized},
	} {
		if got := get(tc.url, tc.token); got != tc.want {
			t.Errorf("GET %s with token %q: %d, want %d", tc.url, tc.token, got, tc.want)
		}
	}
	if got := get(root+"/readyz", ""); got != http.StatusOK && got != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz without a token: %d, want 200 or 503", got)
	}
	// A web page that rebinds its name to 127.0.0.1, or calls from its
	// own origin, reads nothing: not the page, not its API, not even the
	// health probes (which name the groups and servers).
	for _, url := range []string{page, page + "api/upstreams", page + "api/events", metrics, root + "/healthz", root + "/readyz"} {
		if got := get(url, token, "Host", "evil.example:80"); got != http.StatusForbidden {
			t.Errorf("GET %s with Host evil.example: %d, want 403", url, got)
		}
		if got := get(url, token, "Origin", "https://evil.example"); got != http.StatusForbidden {
			t.Errorf("GET %s from origin evil.example: %d, want 403", url, got)
		}
	}
	// A request with a body that never comes, to a route or to none, is
	// answered at once, its connection closed: the old listener waited
	// for the body, with no deadline.
	for _, head := range []string{"POST /healthz HTTP/1.1\r\nContent-Length: 10", "PUT /none HTTP/1.1\r\nTransfer-Encoding: chunked"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(root, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s\r\nHost: 127.0.0.1\r\n\r\n", head)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || !resp.Close {
			t.Errorf("%s, its body never sent: %v, no answer closing the connection", strings.Fields(head)[:2], err)
		}
		conn.Close()
	}
	// A client that sends its headers slowly (slow loris) is cut off.
	conn, err := net.Dial("tcp", strings.TrimPrefix(root, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /ui/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	conn.SetReadDeadline(time.Now().Add(45 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("a connection that never finished its headers was not closed: %v", err)
	}
	// The page carries nothing the token guards, and is not to be framed.
	req, _ := http.NewRequest(http.MethodGet, page, nil)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), token) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("the page: CSP %q, token in it: %v", resp.Header.Get("Content-Security-Policy"), strings.Contains(string(body), token))
	}
}
