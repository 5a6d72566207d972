package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// httpUpstream is a raw MCP server over Streamable HTTP (/mcp) and legacy
// SSE (/sse), written by hand so that it keeps every byte the hub POSTs
// and answers with bytes of its own.
type httpUpstream struct {
	mu       sync.Mutex
	posted   [][]byte // every POST body, in order
	session  string   // the Streamable HTTP session; "" once forgotten
	sessions int      // sessions begun (initialize answered)
	status   int      // when not 0, every POST is refused with it
	flood    int      // requests sent on the GET stream when it opens
	sse      chan []byte
	endSSE   bool // end the SSE stream right after the endpoint event
	dupKeys  bool // answer tools/call with a result given twice
	// onPost, when set, may serve a POST of the session itself (true).
	onPost func(w http.ResponseWriter, r *http.Request, body []byte) bool
	// onGet, when set, may serve a GET of the session itself (true).
	onGet func(w http.ResponseWriter, r *http.Request) bool
}

// result is what tools/call answers: < & and an escape, as a server wrote
// them.
const result = `{"content":[{"type":"text","text":"<ok> & \u00e9"}],"n":1.0}`

func newHTTPUpstream(t *testing.T) (*httpUpstream, *httptest.Server) {
	u := &httpUpstream{sse: make(chan []byte, 64)}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return u, srv
}

func (u *httpUpstream) bodies() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.posted...)
}

// answer is the JSON-RPC answer to msg, nil for a notification or answer.
func (u *httpUpstream) answer(msg []byte) []byte {
	id, method := jsonrpc.Field(msg, "id"), jsonrpc.Field(msg, "method")
	if id == nil || method == nil {
		return nil
	}
	res := `{}`
	switch string(method) {
	case `"server/discover"`:
		return jsonrpc.EncodeError(id, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found"))
	case `"initialize"`:
		res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
	case `"tools/list"`:
		res = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	case `"tools/call"`:
		res = result
		u.mu.Lock()
		dup := u.dupKeys
		u.mu.Unlock()
		if dup {
			return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[]},"result":` + result + `}`)
		}
	}
	return jsonrpc.EncodeResult(id, json.RawMessage(res))
}

func (u *httpUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/sse" && r.Method == http.MethodGet:
		u.serveSSE(w, r)
		return
	case r.Method == http.MethodGet:
		u.serveGET(w, r)
		return
	case r.Method == http.MethodDelete:
		return
	}
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.posted = append(u.posted, body)
	status, session := u.status, u.session
	u.mu.Unlock()
	if status != 0 {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://example/prm"`)
		http.Error(w, "no", status)
		return
	}
	answer := u.answer(body)
	if r.URL.Path == "/message" {
		w.WriteHeader(http.StatusAccepted)
		if answer != nil {
			u.sse <- answer
		}
		return
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && sid != session {
		http.NotFound(w, r)
		return
	}
	if u.onPost != nil && u.onPost(w, r, body) {
		return
	}
	if answer == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if bytes.Contains(body, []byte(`"initialize"`)) {
		u.mu.Lock()
		u.sessions++
		u.session = fmt.Sprintf("s%d", u.sessions)
		w.Header().Set("Mcp-Session-Id", u.session)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", answer)
}

// serveGET is the GET stream: the flood of requests, if any, then
// nothing until the hub goes.
func (u *httpUpstream) serveGET(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	flood, onGet := u.flood, u.onGet
	u.mu.Unlock()
	if onGet != nil && onGet(w, r) {
		return
	}
	if flood == 0 {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range flood {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"f%d\",\"method\":\"roots/list\"}\n\n", i)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// serveSSE is the legacy SSE stream: the endpoint, then the answers to
// what is POSTed to it.
func (u *httpUpstream) serveSSE(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "event: endpoint\ndata: /message?session=1\n\n")
	w.(http.Flusher).Flush()
	u.mu.Lock()
	end := u.endSSE
	u.mu.Unlock()
	if end {
		return
	}
	for {
		select {
		case msg := <-u.sse:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// httpConfig is a config of one group "g" reached at url.
func httpConfig(t *testing.T, url string, transport config.Transport, settings string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  g:\n    description: remote\n    url: %q\n",
		t.TempDir(), settings, url)
	if transport != "" {
		yaml += fmt.Sprintf("    transport: %s\n", transport)
	}
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// startHTTP starts a manager for cfg and returns its server; the manager
// is closed when the test ends.
func startHTTP(t *testing.T, cfg *config.Config) (*Manager, *Server) {
	t.Helper()
	m := New(cfg, testLogger(t))
	// As startFake: most tests read no events, and a call during which the
	// server sent one waited the whole 5 s for the hub to route it.
	m.routeWait = 50 * time.Millisecond
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	t.Cleanup(func() { m.Close() })
	return m, m.Servers()[0]
}

// The params a client sent reach an HTTP upstream byte for byte (<, &,
// escapes, key order, numbers as written), and its result comes back
// byte for byte, over Streamable HTTP and legacy SSE alike.
func TestHTTPParamsPassByteForByte(t *testing.T) {
	t.Parallel()
	const params = `{"name":"echo","arguments":{"z":"<b>&</b>","\u00e9":"\u00e9","a":[1.0,1e2,-0.5E-3]},"_meta":{"progressToken":7}}`
	for _, tc := range []struct {
		transport config.Transport
		path      string
	}{{config.TransportStreamableHTTP, "/mcp"}, {config.TransportSSE, "/sse"}} {
		t.Run(string(tc.transport), func(t *testing.T) {
			u, srv := newHTTPUpstream(t)
			_, s := startHTTP(t, httpConfig(t, srv.URL+tc.path, tc.transport, ""))
			await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
			res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(params), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if string(res) != result {
				t.Errorf("result\n got: %s\nwant: %s", res, result)
			}
			var call []byte
			for _, b := range u.bodies() {
				if tc.transport == config.TransportSSE && bytes.Contains(b, []byte(`"server/discover"`)) {
					t.Errorf("a legacy SSE upstream was asked server/discover: %s", b)
				}
				if bytes.Contains(b, []byte(`"tools/call"`)) {
					call = b
				}
			}
			if !bytes.Contains(call, []byte(`"params":`+params+`}`)) {
				t.Errorf("the upstream received\n%s\nwant params\n%s", call, params)
			}
		})
	}
}

// A server that forgot the session (HTTP 404) ends the connection; the
// call that found out is retried on a new session.
func TestHTTPSessionExpiredReconnects(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	u.mu.Lock()
	u.session = "" // the server restarted
	u.mu.Unlock()
	res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"echo"}`), 10*time.Second)
	if err != nil || string(res) != result {
		t.Fatalf("call after the session expired: %s, %v", res, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sessions != 2 {
		t.Errorf("%d sessions, want 2", u.sessions)
	}
}

// A 401 to initialize says to sign in.
func TestHTTPUnauthorizedAsksForSignIn(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	u.status = http.StatusUnauthorized
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", "", fastRetry))
	await.For(t, 10*time.Second, "the upstream to fail", func() bool { return s.Status().State == StateFailed })
	abs, _ := filepath.Abs("test.yaml") // the config's, named since it is not the default one
	if err := s.Status().Err; err == nil || err.Error() != "the server requires signing in: run: dynamic-mcp auth login g -c "+abs {
		t.Errorf("status: %v", err)
	}
}

// A legacy SSE stream that ends as soon as it named its endpoint ends the
// connection then and there, not at the connect timeout.
func TestSSEStreamEndNeverMissed(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	u.endSSE = true
	// The connect timeout stays beyond the bound below, both scaled.
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/sse", config.TransportSSE, fmt.Sprintf("connect_timeout: %s, %s", await.Slow*time.Minute, fastRetry)))
	start := time.Now()
	await.For(t, 30*time.Second, "the upstream to fail", func() bool { return s.Status().State == StateFailed })
	if took := time.Since(start); took > await.Slow*20*time.Second {
		t.Errorf("failed after %s", took)
	}
	if err := s.Status().Err; err == nil || !strings.Contains(err.Error(), "the server ended the event stream") {
		t.Errorf("status: %v", err)
	}
}

// The server's requests on the GET stream beyond the cap are refused at
// once; those within it reach the hub.
func TestHTTPServerRequestsCapped(t *testing.T) {
	t.Parallel()
	const n = 200
	u, srv := newHTTPUpstream(t)
	u.flood = n
	m, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, "call_timeout: 20s"))
	var reached atomic.Int32
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case e := <-m.Events():
				if e.Kind == EventRequest {
					reached.Add(1)
				}
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	refusals := func() int {
		k := 0
		for _, b := range u.bodies() {
			if jsonrpc.Field(b, "error") != nil {
				k++
			}
		}
		return k
	}
	await.For(t, 5*time.Second, "the refusals", func() bool { return refusals() == n-maxOutstanding })
	await.For(t, 5*time.Second, "the requests within the cap", func() bool { return reached.Load() == maxOutstanding })
}

// hubGoroutines are the goroutines running in the hub's code, but for
// those already running before (by their first line, "goroutine N
// [...]"'s id): what the tests of the binary share and keep, such as
// pgtest's PostgreSQL cluster (a goroutine waits for its process), is
// not the upstream's, and is running here after any test that used it
// (-count=2 runs this test after them).
func hubGoroutines(before map[string]bool) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "dynamic-mcp/") && !strings.Contains(g, "testing.tRunner") && !strings.Contains(g, "http_test.go") && !before[goroutineID(g)] {
			found = append(found, g)
		}
	}
	return found
}

// goroutineID is the id of the goroutine whose stack is g.
func goroutineID(g string) string {
	f := strings.Fields(g)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// Closing the manager leaves no goroutine of a connection behind, for
// each kind of upstream.
func TestClosingEachKindOfUpstreamLeavesNoGoroutine(t *testing.T) {
	u, srv := newHTTPUpstream(t)
	u.flood = 1 // a GET stream that stays open
	for _, cfg := range []*config.Config{
		fakeConfig(t, ""),
		httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""),
		httpConfig(t, srv.URL+"/sse", config.TransportSSE, ""),
	} {
		before := map[string]bool{}
		for _, g := range hubGoroutines(nil) {
			before[goroutineID(g)] = true
		}
		m := New(cfg, testLogger(t))
		m.SetClientCapabilities(mcp.ClientCapabilities{})
		m.Start(context.Background())
		s := m.Servers()[0]
		await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
		m.Close()
		deadline := time.Now().Add(await.Slow * 5 * time.Second)
		for g := hubGoroutines(before); len(g) > 0; g = hubGoroutines(before) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d goroutines left after Close:\n%s", cfg.Groups[0].Servers[0].ID(), len(g), strings.Join(g, "\n\n"))
			}
			runtime.Gosched()
		}
	}
}

// What an HTTP upstream sends is held to the rules stdio's messages are:
// an answer with a key twice is refused, and its call fails at once.
func TestHTTPAnswerWithARepeatedKeyRefused(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	u.dupKeys = true
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"echo"}`), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "result") {
		t.Fatalf("call: %s, %v", res, err)
	}
}

// A request the server sends in the answer to a call is the call's: it
// goes to the client session the call is for, even while another
// session's call is in flight to the same connection.
func TestHTTPRequestInAnAnswerIsTheCalls(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	slowStarted, slowDone, answered := make(chan struct{}), make(chan struct{}), make(chan []byte, 1)
	u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if id := jsonrpc.Field(body, "id"); string(id) == `"q1"` && jsonrpc.Field(body, "method") == nil {
			answered <- body
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		id := jsonrpc.Field(body, "id")
		switch string(jsonrpc.Field(jsonrpc.Field(body, "params"), "name")) {
		case `"slow"`:
			close(slowStarted)
			<-slowDone
		case `"ask"`:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"method\":\"sampling/createMessage\",\"params\":{}}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-answered:
			case <-r.Context().Done():
				return true
			}
		default:
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(id, json.RawMessage(result)))
		return true
	}
	m, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })

	calls := make(chan error, 2)
	call := func(owner testOwner, name string) {
		_, err := s.Request(t.Context(), owner, "tools/call", json.RawMessage(`{"name":"`+name+`"}`), 10*time.Second)
		calls <- err
	}
	go call("b", "slow")
	<-slowStarted
	go call("a", "ask")
	var e Event
	select {
	case e = <-m.Events():
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("no request from the server")
	}
	if e.Kind != EventRequest || e.Method != "sampling/createMessage" || e.Ambiguous || e.Owner != testOwner("a") {
		t.Errorf("event %v %s, owner %v, ambiguous %v", e.Kind, e.Method, e.Owner, e.Ambiguous)
	}
	e.Reply(json.RawMessage(`{"model":"m"}`), nil)
	if err := <-calls; err != nil {
		t.Errorf("the call that asked: %v", err)
	}
	close(slowDone)
	if err := <-calls; err != nil {
		t.Errorf("the slow call: %v", err)
	}
}
