package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

const testToken = "test-token-0123456789"

// startHTTPHub starts the hub on cfg serving HTTP on a free loopback port
// and returns its base URL.
func startHTTPHub(t *testing.T, cfg string, extra ...string) (string, *lockedBuffer) {
	t.Helper()
	return startHTTPHubEnv(t, nil, cfg, extra...)
}

// startHTTPHubEnv is startHTTPHub with env added to the hub's
// environment.
func startHTTPHubEnv(t *testing.T, env []string, cfg string, extra ...string) (string, *lockedBuffer) {
	t.Helper()
	return startHTTPHubBin(t, raceHubBin, env, cfg, extra...)
}

// startPlainHTTPHub is startHTTPHub with hubBin, the build without the
// race detector, at about half the CPU (hubbuild_test.go), for a test of
// what the hub answers or shows (a conformance suite's scenarios, the
// inspector's redaction), not of sessions and requests at once: the race
// detector watches those in process (server/mcphttp's and
// server/inspect's tests) and in the HTTP hubs of this package's tests of
// concurrent clients and of the inspector's live page.
func startPlainHTTPHub(t *testing.T, cfg string, extra ...string) (string, *lockedBuffer) {
	t.Helper()
	return startHTTPHubBin(t, hubBin, nil, cfg, extra...)
}

// startHTTPHubBin is startHTTPHubEnv with bin for the hub command: its
// stderr is checked for the race detector's reports where bin is a race
// build (raceChecked).
func startHTTPHubBin(t *testing.T, bin string, env []string, cfg string, extra ...string) (string, *lockedBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, append([]string{"serve", "-c", path, "--http", "127.0.0.1:0", "--log-level", "debug"}, extra...)...)
	cmd.Env = append(append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir()), env...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute): // bounds a hang, not a guess at a loaded machine
			cmd.Process.Kill()
			<-done
			t.Error("the HTTP hub did not stop on SIGINT")
		}
		if raceChecked(bin) && strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in the hub")
		}
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr.String())
		}
	})
	return "http://" + servingAddr(t, "the hub", stderr), stderr
}

// servingAddr waits for the serving line on stderr of what (a hub, a
// replica) and returns the address it names, host:port.
func servingAddr(t testing.TB, what string, stderr *lockedBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`serving over HTTP" addr=(\S+)`)
	var addr string
	await.Costly(t, 10*time.Second, what+" to listen", func() bool {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	return addr
}

// httpClient connects a raw MCP client to the hub's /mcp over Streamable
// HTTP: once initialized it also listens on the GET stream, where the hub
// sends what belongs to no request.
func httpClient(t *testing.T, base string, headers map[string]string) *client {
	t.Helper()
	if headers == nil {
		headers = map[string]string{"Authorization": "Bearer " + testToken}
	}
	c := &client{t: t, stderr: &lockedBuffer{}, noted: make(chan struct{}, 1)}
	// mcp-go's client transport, which opens the GET stream once
	// initialize is answered: a client nobody here wrote, in its 2025 era,
	// where the standalone GET stream is how a server reaches it.
	//lint:ignore SA1019 the tests drive the 2025-era GET stream on purpose
	tr, err := mcptransport.NewStreamableHTTP(base+"/mcp", mcptransport.WithHTTPHeaders(headers), mcptransport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c.tr = tr
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.listen()
	t.Cleanup(func() { tr.Close() })
	return c
}

func TestHTTPAccessControl(t *testing.T) {
	t.Parallel()
	base, _ := startHTTPHub(t, fmt.Sprintf(`
groups:
  f: { description: fake, command: %q }
http:
  allowed_origins: ["https://app.example"]
`, fakeBin))
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(header map[string]string) int {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	bearer := "Bearer " + testToken
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"not a bearer", map[string]string{"Authorization": "Basic " + testToken}, 401},
		{"right token", map[string]string{"Authorization": bearer}, 200},
		{"allowed origin", map[string]string{"Authorization": bearer, "Origin": "https://app.example"}, 200},
		{"loopback origin", map[string]string{"Authorization": bearer, "Origin": "http://localhost:5173"}, 200},
		{"foreign origin", map[string]string{"Authorization": bearer, "Origin": "https://evil.example"}, 403},
		{"foreign host (DNS rebinding)", map[string]string{"Authorization": bearer, "Host": "evil.example"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header
			if host, ok := h["Host"]; ok {
				req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(initialize))
				req.Host = host
				req.Header.Set("Authorization", h["Authorization"])
				req.Header.Set("Content-Type", "application/json")
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
				}
				return
			}
			if got := post(h); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
	resp, err := testClient.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz without a token: %v %v", resp, err)
	}
	// A request without a session, or with one that does not exist.
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Authorization", bearer)
	if resp, _ := testClient.Do(req); resp.StatusCode != 400 {
		t.Errorf("no session: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Authorization", bearer)
	req.Header.Set("Mcp-Session-Id", "gone")
	if resp, _ := testClient.Do(req); resp.StatusCode != 404 {
		t.Errorf("unknown session: %d", resp.StatusCode)
	}
}

func TestGeneratedTokenIsPrintedAndRequired(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin)), 0o600)
	stderr := &lockedBuffer{}
	cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0")
	cmd.Env = os.Environ() // no DYNAMIC_MCP_TOKEN
	for i, e := range cmd.Env {
		if strings.HasPrefix(e, "DYNAMIC_MCP_TOKEN=") {
			cmd.Env[i] = "DYNAMIC_MCP_TOKEN="
		}
	}
	cmd.Stderr = stderr
	cmd.Start()
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	var token, base string
	await.Costly(t, 10*time.Second, "the token and address", func() bool {
		s := stderr.String()
		// stderr is no terminal: the token is in the file the log names.
		if m := regexp.MustCompile(`clients must send the one in the file.*" file=(\S+)`).FindStringSubmatch(s); m != nil {
			b, _ := os.ReadFile(m[1])
			token = strings.TrimSpace(string(b))
		}
		if m := regexp.MustCompile(`serving over HTTP" addr=(\S+)`).FindStringSubmatch(s); m != nil {
			base = "http://" + m[1]
		}
		return token != "" && base != ""
	})
	c := httpClient(t, base, map[string]string{"Authorization": "Bearer " + token})
	c.initialize("2025-06-18")
	if _, err := testClient.Post(base+"/mcp", "application/json", strings.NewReader(`{}`)); err != nil {
		t.Fatal(err)
	}
	if cmd2 := exec.Command(hubBin, "serve", "-c", path, "--http", "0.0.0.0:0", "--insecure-no-auth"); cmd2.Run() == nil {
		t.Error("--insecure-no-auth on a public address was accepted")
	}
}

// recordingUpstream is a real MCP server over Streamable HTTP (mcp-go) that
// records every request header it receives.
func recordingUpstream(t *testing.T) (*httptest.Server, func() []http.Header) {
	s := mcpserver.NewMCPServer("recorder", "1")
	s.AddTool(mcp.NewTool("hello", mcp.WithDescription("says hello")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello from upstream"), nil
	})
	var mu sync.Mutex
	var seen []http.Header
	h := mcpserver.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

func TestClientTokenNeverReachesAnUpstream(t *testing.T) {
	t.Parallel()
	up, seen := recordingUpstream(t)
	base, _ := startHTTPHub(t, fmt.Sprintf(`
mode: flat
groups:
  r:
    description: records headers
    url: %q
    headers: { X-Upstream-Key: "upstream-secret" }
`, up.URL+"/mcp"))
	c := httpClient(t, base, nil)
	c.initialize("2025-06-18")
	c.waitFlatTools(1)
	if text, _ := c.callText("r__hello", nil); text != "hello from upstream" {
		t.Fatalf("call: %q", text)
	}
	headers := seen()
	if len(headers) == 0 {
		t.Fatal("the upstream saw no request")
	}
	for _, h := range headers {
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, testToken) {
					t.Errorf("upstream saw the client's token in %s", k)
				}
			}
		}
		if h.Get("X-Upstream-Key") != "upstream-secret" {
			t.Errorf("upstream request without the configured header: %v", h)
		}
	}
}

func TestTwoHTTPSessionsGetOnlyWhatIsTheirs(t *testing.T) {
	t.Parallel()
	base, _ := startHTTPHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	var a, b *client
	var askedA, askedB atomic.Int32
	for i, asked := range []*atomic.Int32{&askedA, &askedB} {
		c := httpClient(t, base, nil)
		name := []string{"A", "B"}[i]
		c.tr.SetRequestHandler(func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
			asked.Add(1)
			b, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"name": name}})
			return mcptransport.NewJSONRPCResultResponse(req.ID, b), nil
		})
		c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "clientInfo": map[string]any{"name": name, "version": "1"},
			"capabilities": map[string]any{"elicitation": map[string]any{}}})
		if err := c.tr.SendNotification(t.Context(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}}); err != nil {
			t.Fatal(err)
		}
		c.waitFlatTools(fakeTools)
		if i == 0 {
			a = c
		} else {
			b = c
		}
	}

	// Both use progress token "p": each sees only its own progress.
	var wg sync.WaitGroup
	for _, x := range []struct {
		c    *client
		text string
	}{{a, "A"}, {b, "B"}} {
		wg.Go(func() {
			x.c.call("tools/call", map[string]any{"name": "f__progress", "arguments": map[string]any{"text": x.text}, "_meta": map[string]any{"progressToken": "p"}})
		})
	}
	wg.Wait()
	for _, x := range []struct {
		c    *client
		text string
	}{{a, "A"}, {b, "B"}} {
		await.Costly(t, 5*time.Second, "3 progress notifications for "+x.text, func() bool { return len(x.c.notesOf("notifications/progress")) >= 3 })
		for _, n := range x.c.notesOf("notifications/progress") {
			if n.Params.AdditionalFields["message"] != x.text || n.Params.AdditionalFields["progressToken"] != "p" {
				t.Errorf("session %s got progress %v", x.text, n.Params.AdditionalFields)
			}
		}
	}

	// An elicitation goes to the session whose call caused it.
	text, _ := a.callText("f__ask", nil)
	if !strings.Contains(text, `"name":"A"`) || askedA.Load() != 1 || askedB.Load() != 0 {
		t.Errorf("elicitation: %q, A asked %d, B asked %d", text, askedA.Load(), askedB.Load())
	}

	// Only the subscribed session hears of an update. B, subscribed to
	// another resource, hears of that one's update, which the upstream
	// sends after the first: had the first gone to B too, B would have
	// heard of it before.
	a.call("resources/subscribe", map[string]any{"uri": "fake://fake/res/1"})
	b.call("resources/subscribe", map[string]any{"uri": "fake://fake/res/2"})
	b.callText("f__touch", map[string]any{"text": "fake://fake/res/1"})
	b.callText("f__touch", map[string]any{"text": "fake://fake/res/2"})
	await.Costly(t, 5*time.Second, "resources/updated to A", func() bool { return len(a.notesOf("notifications/resources/updated")) == 1 })
	await.Costly(t, 5*time.Second, "resources/updated to B", func() bool { return len(b.notesOf("notifications/resources/updated")) >= 1 })
	for _, n := range b.notesOf("notifications/resources/updated") {
		if uri := n.Params.AdditionalFields["uri"]; uri != "fake://fake/res/2" {
			t.Errorf("B, not subscribed to it, heard that %v was updated", uri)
		}
	}
}

// startEverythingHTTP runs server-everything over one of its HTTP
// transports until the test ends and returns its port
// (startEverythingProcess).
func startEverythingHTTP(t *testing.T, transport string) string {
	t.Helper()
	p := startEverythingProcess(t, transport)
	t.Cleanup(p.stop)
	return p.port
}

// everythingProcess is a server-everything over one of its HTTP
// transports (startEverythingProcess).
type everythingProcess struct {
	port   string
	stop   func()        // kills it and waits for it to exit
	exited chan struct{} // closed once it has exited
	out    *lockedBuffer // what it wrote
}

// startEverythingProcess starts server-everything over transport and
// waits until it answers as server-everything (isEverything). Its port is
// that of a listener the test made and handed over (startListening; the
// server listens on it by testdata/sdkclient/listenfd.cjs), so whatever
// answers there is this server. The caller stops it; should the wait
// fail, it is stopped here.
func startEverythingProcess(t testing.TB, transport string) *everythingProcess {
	t.Helper()
	argv := referenceServer(t, "server-everything", transport)
	cmd := exec.Command(argv[0], append([]string{"--require", filepath.Join(repoDir, "testdata", "sdkclient", "listenfd.cjs")}, argv[1:]...)...)
	p := &everythingProcess{exited: make(chan struct{}), out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	p.port = startListening(t, cmd)
	go func() { cmd.Wait(); close(p.exited) }()
	p.stop = func() { cmd.Process.Kill(); <-p.exited }
	up := false
	defer func() {
		if !up { // the test failed waiting: nobody else stops it
			p.stop()
		}
	}()
	await.Costly(t, 60*time.Second, "server-everything "+transport+" to answer", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("server-everything %s exited before it answered: %s", transport, p.out)
		default:
		}
		return isEverything(transport, p.port)
	})
	up = true
	return p
}

// isEverything reports whether server-everything answers on port over
// transport: its initialize result over Streamable HTTP, its endpoint
// event over SSE.
func isEverything(transport, port string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var req *http.Request
	want := `"serverInfo":{"name":"mcp-servers/everything"`
	if transport == "sse" {
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+port+"/sse", nil)
		req.Header.Set("Accept", "text/event-stream")
		want = "event: endpoint"
	} else {
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+port+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var got []byte
	buf := make([]byte, 4096)
	for resp.StatusCode == http.StatusOK && len(got) < 64<<10 {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if strings.Contains(string(got), want) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

func TestEverythingAsStreamableHTTPAndSSEUpstream(t *testing.T) {
	t.Parallel()
	ssePort := startEverythingHTTP(t, "sse")
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  web:
    description: over Streamable HTTP
    url: %s
  old:
    description: over legacy SSE
    url: http://127.0.0.1:%s/sse
    transport: sse
  auto:
    description: no transport given, so Streamable HTTP first, then SSE
    url: http://127.0.0.1:%s/sse
`, sharedEverythingURL(t), ssePort, ssePort))
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "clientInfo": map[string]any{"name": "t", "version": "1"},
		"capabilities": map[string]any{"sampling": map[string]any{}}})
	answerClientRequests(c)
	await.Costly(t, 20*time.Second, "both upstreams", func() bool {
		list := string(c.call("tools/list", nil))
		return strings.Contains(list, "web__get-sum") && strings.Contains(list, "old__get-sum") && strings.Contains(list, "auto__get-sum")
	})
	for _, g := range []string{"web", "old"} {
		if text, isErr := c.callText(g+"__get-sum", map[string]any{"a": 2, "b": 40}); isErr || !strings.Contains(text, "42") {
			t.Errorf("%s get-sum: %q", g, text)
		}
		res := c.call("tools/call", map[string]any{"name": g + "__trigger-long-running-operation", "arguments": map[string]any{"duration": 0.2, "steps": 2},
			"_meta": map[string]any{"progressToken": g + "-tok"}})
		if text, _ := toolText(t, res); !strings.Contains(text, "completed") {
			t.Errorf("%s long running: %q", g, text)
		}
		await.Costly(t, 5*time.Second, g+" progress", func() bool {
			for _, n := range c.notesOf("notifications/progress") {
				if n.Params.AdditionalFields["progressToken"] == g+"-tok" {
					return true
				}
			}
			return false
		})
	}
	if text, _ := c.callText("web__trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5}); !strings.Contains(text, "sampled by the test client") {
		t.Errorf("sampling over Streamable HTTP: %q", text)
	}
}

// swappableUpstream is an HTTP MCP server whose handler can be replaced
// while the hub talks to it: a fresh mcp-go server forgets every session,
// a failing handler stands for an outage.
type swappableUpstream struct {
	srv   *httptest.Server
	h     atomic.Pointer[http.Handler]
	inits atomic.Int32
}

// sessionSet issues session ids and knows only those it issued, as a real
// server that restarted would.
type sessionSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (s *sessionSet) Generate() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("sess-%d-%d", time.Now().UnixNano(), len(s.ids))
	s.ids[id] = true
	return id
}

func (s *sessionSet) Validate(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ids[id] {
		return false, fmt.Errorf("unknown session %s", id)
	}
	return false, nil
}

func (s *sessionSet) Terminate(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
	return false, nil
}

func newSwappableUpstream(t *testing.T) *swappableUpstream {
	u := &swappableUpstream{}
	u.fresh()
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"method":"initialize"`) {
				u.inits.Add(1)
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		(*u.h.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// fresh puts a new server in place, which knows no session. It offers
// only a protocol version with sessions (2026-07-28 has none).
func (u *swappableUpstream) fresh() {
	s := mcpserver.NewMCPServer("swappable", "1")
	s.AddTool(mcp.NewTool("hello", mcp.WithDescription("says hello")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello from upstream"), nil
	})
	h := http.Handler(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithSessionIdManager(&sessionSet{ids: map[string]bool{}}),
		mcpserver.WithStreamableHTTPProtocolVersions(mcp.LATEST_LEGACY_PROTOCOL_VERSION)))
	u.h.Store(&h)
}

func (u *swappableUpstream) fail(status int) {
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	u.h.Store(&h)
}

func TestRemoteUpstreamSessionExpiryAndOutage(t *testing.T) {
	t.Parallel()
	u := newSwappableUpstream(t)
	c := startHub(t, fmt.Sprintf(`
mode: flat
groups:
  r:
    description: remote
    url: %q
    transport: streamable-http
    retry: { initial_interval: 100ms, reconnect_interval: 200ms }
`, u.srv.URL+"/mcp"))
	c.initialize("2025-06-18")
	c.waitFlatTools(1)
	if text, _ := c.callText("r__hello", nil); text != "hello from upstream" {
		t.Fatalf("call: %q", text)
	}
	// The server restarts and forgets the session: the hub initializes
	// again, once, and the call succeeds.
	before := u.inits.Load()
	u.fresh()
	if text, isErr := c.callText("r__hello", nil); isErr || text != "hello from upstream" {
		t.Fatalf("call after the session expired: %q", text)
	}
	if got := u.inits.Load() - before; got != 1 {
		t.Errorf("the hub initialized %d times after the 404, want 1", got)
	}
	// An outage: the call fails with a clear reason, the group goes
	// unavailable, and comes back when the server does.
	u.fail(http.StatusServiceUnavailable)
	text, isErr := c.callText("r__hello", nil)
	if !isErr || !strings.Contains(text, "upstream r") {
		t.Errorf("call during an outage: %q (isError %v)", text, isErr)
	}
	await.Costly(t, 10*time.Second, "the group to go", func() bool { return !strings.Contains(string(c.call("tools/list", nil)), "r__hello") })
	u.fresh()
	await.Costly(t, 10*time.Second, "the group to come back", func() bool { return strings.Contains(string(c.call("tools/list", nil)), "r__hello") })
	if text, _ := c.callText("r__hello", nil); text != "hello from upstream" {
		t.Errorf("after the outage: %q", text)
	}
}
