package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// syncBuffer is a log sink the streams write to from their goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// read is one result of a stream's Read.
type read struct {
	msg []byte
	err error
}

// testStream is a stream under test, read by a goroutine of the test's
// until the stream ends.
type testStream struct {
	HTTPStream
	reads chan read
	logs  *syncBuffer
}

// openHTTP is NewHTTP for url, read into reads; it is closed, and its
// reader waited for, when the test ends.
func openHTTP(t *testing.T, url string, kind config.Transport, limit int) *testStream {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := NewHTTP(t.Context(), &config.Server{URL: url, Transport: kind}, config.ServerSettings{ConnectTimeout: 5 * time.Second, MaxMessageSize: limit}, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testStream{HTTPStream: s, reads: make(chan read, 16), logs: logs}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := s.Read()
			var tl *jsonrpc.TooLargeError
			var ce *jsonrpc.CallError
			ts.reads <- read{msg, err}
			if err != nil && !errors.As(err, &tl) && !errors.As(err, &ce) {
				return
			}
		}
	}()
	t.Cleanup(func() {
		s.Close()
		for {
			select {
			case <-ts.reads:
				continue
			case <-done:
			}
			return
		}
	})
	return ts
}

// next is the stream's next read, within 10 s.
func (s *testStream) next(t *testing.T) read {
	t.Helper()
	select {
	case r := <-s.reads:
		return r
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("nothing read")
		return read{}
	}
}

// write writes msg, failing the test on an error.
func (s *testStream) write(t *testing.T, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*await.Slow)
	defer cancel()
	if err := s.Write(ctx, []byte(msg)); err != nil {
		t.Fatalf("write %s: %v", msg, err)
	}
}

// handshake runs initialize and notifications/initialized as the hub does.
func (s *testStream) handshake(t *testing.T) string {
	t.Helper()
	s.write(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r := s.next(t)
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if r.err != nil || json.Unmarshal(r.msg, &res) != nil || res.Result.ProtocolVersion == "" {
		t.Fatalf("initialize: %s %v", r.msg, r.err)
	}
	s.SetProtocolVersion(res.Result.ProtocolVersion)
	s.write(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res.Result.ProtocolVersion
}

// endless answers with status, then writes prefix and filler until the
// client goes away.
func endless(w http.ResponseWriter, r *http.Request, status int, contentType, prefix string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	io.WriteString(w, prefix)
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// allocated runs f and returns the bytes it allocated on the heap: a
// bound on what it held.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// result is a JSON-RPC response to request 1 of exactly size bytes.
func result(size int) []byte {
	head, tail := `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"pad":"`, `"}}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// short is s cut to a length a test log can show.
func short(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// An answer over the limit fails its call, at once and holding no more
// than the limit; the stream goes on.
func TestHTTPResponseOverTheLimitFails(t *testing.T) {
	const limit = 1 << 20
	isTooLarge := func(r read) bool {
		var tl *jsonrpc.TooLargeError
		return errors.As(r.err, &tl) && string(tl.ID) == "1" && tl.Limit == limit
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		check   func(r read) bool
	}{
		{"one byte over", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(result(limit + 1))
		}, isTooLarge},
		{"endless", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusOK, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
		}, isTooLarge},
		{"endless SSE event", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusOK, "text/event-stream", "event: message\ndata: ")
		}, isTooLarge},
		// Of an error page, a few bytes are read for the error.
		{"endless error page", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusBadGateway, "text/html", "")
		}, func(r read) bool {
			var ce *jsonrpc.CallError
			var he *HTTPError
			return errors.As(r.err, &ce) && string(ce.ID) == "1" && errors.As(r.err, &he) && he.Status == http.StatusBadGateway
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			s := openHTTP(t, srv.URL, config.TransportStreamableHTTP, limit)
			var r read
			start := time.Now()
			held := allocated(func() {
				s.write(t, listTools)
				r = s.next(t)
			})
			if !tc.check(r) {
				t.Fatalf("read %s, %v", short(string(r.msg)), short(fmt.Sprint(r.err)))
			}
			if took := time.Since(start); took > 30*time.Second { // a body read to its end would take for ever
				t.Errorf("the call took %s to fail", took)
			}
			if held > 64<<20 {
				t.Errorf("the call allocated %d MiB", held>>20)
			}
		})
	}
}

func TestHTTPMessagesWithinTheLimitPassWhole(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit, size int
		events      bool
	}{
		{"JSON of 5 MiB, limit 10 MiB", 10 << 20, 5 << 20, false},
		// Two events of 600 KiB before the answer: more than the limit in
		// all, within it each.
		{"SSE events of 600 KiB, limit 1 MiB", 1 << 20, 600 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := result(tc.size)
			note := func(i int) string {
				return fmt.Sprintf("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n\"params\":{\"level\":\"info\",\"data\":\"%d%s\"}}", i, strings.Repeat("n", tc.size))
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tc.events {
					w.Header().Set("Content-Type", "application/json")
					w.Write(big)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 2 {
					first, rest, _ := strings.Cut(note(i), "\n")
					fmt.Fprintf(w, "event: message\r\ndata: %s\r\ndata: %s\r\n\r\n", first, rest)
				}
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", big)
			}))
			t.Cleanup(srv.Close)
			s := openHTTP(t, srv.URL, config.TransportStreamableHTTP, tc.limit)
			s.write(t, listTools)
			if tc.events {
				for i := range 2 {
					if r := s.next(t); r.err != nil || string(r.msg) != note(i) {
						t.Fatalf("notification %d: %s %v", i, short(string(r.msg)), r.err)
					}
				}
			}
			if r := s.next(t); r.err != nil || !bytes.Equal(r.msg, big) {
				t.Errorf("answer of %d bytes (%v), want %d", len(r.msg), r.err, len(big))
			}
		})
	}
}

// A legacy SSE stream cannot skip an event over the limit: the stream
// ends, and says why.
func TestSSEEventOverTheLimitEndsTheConnection(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endless(w, r, http.StatusOK, "text/event-stream", "event: endpoint\ndata: /message\n\nevent: message\ndata: ")
	}))
	t.Cleanup(srv.Close)
	s := openHTTP(t, srv.URL, config.TransportSSE, limit)
	r := s.next(t)
	var tl *jsonrpc.TooLargeError
	if !errors.Is(r.err, ErrTooLarge) || errors.As(r.err, &tl) {
		t.Errorf("read %v, want the end of the stream over the limit", r.err)
	}
	if !strings.Contains(s.logs.String(), "upstream SSE event over the 1048576 byte limit (settings.max_message_size)") {
		t.Errorf("the log does not say why:\n%s", s.logs)
	}
}

// The endpoint of a legacy SSE server must be on its origin.
func TestSSEEndpointOnAnotherOriginRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: http://elsewhere.example/message\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	_, err := NewHTTP(t.Context(), &config.Server{URL: srv.URL, Transport: config.TransportSSE}, config.ServerSettings{ConnectTimeout: 5 * time.Second}, nil, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "is not on the origin of") {
		t.Fatalf("dial: %v", err)
	}
}

// legacyServer is a Streamable HTTP server of protocol version 2025-11-25;
// get serves its GET stream.
type legacyServer struct {
	get     func(w http.ResponseWriter, r *http.Request)
	gets    atomic.Int32
	deletes atomic.Int32
	mu      sync.Mutex
	headers http.Header      // of the last GET
	posted  []map[string]any // messages posted that are not requests
	expired bool             // answer 404 to the session
}

func (s *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		s.headers = r.Header.Clone()
		s.mu.Unlock()
		s.gets.Add(1)
		s.get(w, r)
		return
	case http.MethodDelete:
		s.deletes.Add(1)
		return
	}
	s.mu.Lock()
	expired := s.expired
	s.mu.Unlock()
	if expired && r.Header.Get("Mcp-Session-Id") != "" {
		http.NotFound(w, r)
		return
	}
	var msg map[string]any
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, _ := json.Marshal(msg["id"])
	w.Header().Set("Content-Type", "application/json")
	switch msg["method"] {
	case nil:
		s.record(msg)
		w.WriteHeader(http.StatusAccepted)
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "session-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"legacy","version":"1"}}}`, id)
	default:
		if msg["id"] == nil {
			s.record(msg)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
	}
}

func (s *legacyServer) record(msg map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posted = append(s.posted, msg)
}

func (s *legacyServer) lastGet() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers
}

func (s *legacyServer) answered(id float64) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.posted {
		if m["id"] == id && m["method"] == nil {
			return m
		}
	}
	return nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a busy machine must not fail a wait for an event
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// What the server sends on the GET stream comes out of Read; an answer
// written is POSTed; the GET carries the session and the version; Close
// ends the session with a DELETE.
func TestLegacySessionGetsTheGETStream(t *testing.T) {
	s := &legacyServer{}
	s.get = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: prime\ndata:\n\n: a comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"method\":\"roots/list\"}\r\n\r\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ts := openHTTP(t, srv.URL, config.TransportStreamableHTTP, 1<<20)
	if v := ts.handshake(t); v != "2025-11-25" {
		t.Fatalf("protocol version %q", v)
	}
	if r := ts.next(t); string(r.msg) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatalf("read %s %v", r.msg, r.err)
	}
	if r := ts.next(t); string(r.msg) != "{\"jsonrpc\":\"2.0\",\"id\":7,\n\"method\":\"roots/list\"}" {
		t.Fatalf("read %s %v", r.msg, r.err)
	}
	ts.write(t, `{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`)
	if got := s.answered(7)["result"]; fmt.Sprint(got) != "map[roots:[]]" {
		t.Errorf("answer %v", got)
	}
	h := s.lastGet()
	if h.Get("Mcp-Session-Id") != "session-1" || h.Get("MCP-Protocol-Version") != "2025-11-25" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("GET headers: %v", h)
	}
	start := time.Now()
	if err := ts.Close(); err != nil {
		t.Error(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("Close took %s", took)
	}
	if n := s.deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs on Close", n)
	}
}

// A 404 on the session ends the stream with ErrSessionExpired, and no
// DELETE is sent for a session the server forgot.
func TestSessionExpired(t *testing.T) {
	s := &legacyServer{get: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ts := openHTTP(t, srv.URL, config.TransportStreamableHTTP, 1<<20)
	ts.handshake(t)
	s.mu.Lock()
	s.expired = true
	s.mu.Unlock()
	ts.write(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := ts.next(t); !errors.Is(r.err, ErrSessionExpired) {
		t.Fatalf("read %s, %v", r.msg, r.err)
	}
	ts.Close()
	if n := s.deletes.Load(); n != 0 {
		t.Errorf("%d DELETEs of an expired session", n)
	}
}

// A refused POST fails its call with the status, which the hub tells a
// sign-in from (401, 403 insufficient_scope).
func TestRefusedPostFailsTheCall(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="files:read"`)
				http.Error(w, "no", status)
			}))
			t.Cleanup(srv.Close)
			for _, kind := range []config.Transport{config.TransportStreamableHTTP} {
				ts := openHTTP(t, srv.URL, kind, 1<<20)
				ts.write(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
				r := ts.next(t)
				var ce *jsonrpc.CallError
				var he *HTTPError
				if !errors.As(r.err, &ce) || string(ce.ID) != "1" || !errors.As(r.err, &he) || he.Status != status ||
					!strings.Contains(he.Error(), "insufficient_scope") {
					t.Fatalf("read %s, %v", r.msg, r.err)
				}
			}
		})
	}
}

func TestEndlessLineFailsTheGETStream(t *testing.T) {
	const limit = 1 << 20
	s := &legacyServer{}
	s.get = func(w http.ResponseWriter, r *http.Request) {
		endless(w, r, http.StatusOK, "text/event-stream", "event: message\ndata: ")
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var ts *testStream
	held := allocated(func() {
		ts = openHTTP(t, srv.URL, config.TransportStreamableHTTP, limit)
		ts.HTTPStream.(*Streamable).retryMin = time.Millisecond
		ts.handshake(t)
		// The stream fails, and is opened again.
		waitUntil(t, "the GET stream to be opened again", func() bool { return s.gets.Load() >= 2 })
	})
	if !strings.Contains(ts.logs.String(), "upstream SSE event over the 1048576 byte limit (settings.max_message_size)") {
		t.Errorf("the log does not say why the stream failed:\n%s", ts.logs)
	}
	if held > 64<<20 {
		t.Errorf("allocated %d MiB", held>>20)
	}
	ts.write(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := ts.next(t); r.err != nil || string(jsonrpc.Field(r.msg, "id")) != "2" {
		t.Errorf("a request after the stream failed: %s %v", r.msg, r.err)
	}
}

// A 405 to the GET says the server has no stream: it is not asked again.
func TestNoGETStreamWhereTheServerHasNone(t *testing.T) {
	s := &legacyServer{}
	s.get = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ts := openHTTP(t, srv.URL, config.TransportStreamableHTTP, 1<<20)
	st := ts.HTTPStream.(*Streamable)
	st.retryMin = time.Millisecond
	ts.handshake(t)
	st.mu.Lock()
	ended := st.listenEnded
	st.mu.Unlock()
	select {
	case <-ended: // the GET loop is over: no GET can follow
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the GET stream goes on after a 405")
	}
	if n := s.gets.Load(); n != 1 {
		t.Errorf("%d GETs after a 405", n)
	}
}

// mcpgoUpstream is mcp-go's own server over Streamable HTTP, counting
// GETs.
func mcpgoUpstream(t *testing.T) (*mcpserver.MCPServer, *httptest.Server, *atomic.Int32) {
	s := mcpserver.NewMCPServer("mcp-go", "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("hello"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return s, srv, &gets
}

// An mcp-go server's notifications reach the hub while no request is in
// flight: on the GET stream.
func TestMCPGoServerNotifiesWhileIdle(t *testing.T) {
	s, srv, gets := mcpgoUpstream(t)
	ts := openHTTP(t, srv.URL+"/mcp", config.TransportStreamableHTTP, 1<<20)
	if v := ts.handshake(t); v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("protocol version %q", v)
	}
	waitUntil(t, "the GET stream", func() bool { return gets.Load() >= 1 })
	// The stream may open after the first tool is added: add until a
	// list_changed arrives.
	stop := make(chan struct{})
	added := make(chan struct{})
	go func() {
		defer close(added)
		for i := 0; ; i++ {
			s.AddTool(mcp.NewTool(fmt.Sprintf("t%d", i)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-added }()
	for {
		r := ts.next(t)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if string(jsonrpc.Field(r.msg, "method")) == `"notifications/tools/list_changed"` {
			return
		}
	}
}

// streamGoroutines are the goroutines running in a stream's code.
func streamGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "dynamic-mcp/transport.(*") && !strings.Contains(g, "testing.tRunner") {
			found = append(found, g)
		}
	}
	return found
}

// Close returns once every goroutine of the stream is over: a call
// whose answer is still streaming, the GET stream, the SSE stream.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	hold := func(w http.ResponseWriter, r *http.Request, prefix string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, prefix)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	s := &legacyServer{get: func(w http.ResponseWriter, r *http.Request) { hold(w, r, ": open\n\n") }}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { hold(w, r, ": working\n\n") })
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		hold(w, r, "event: endpoint\ndata: /sse\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	streamable := openHTTP(t, srv.URL+"/mcp", config.TransportStreamableHTTP, 1<<20)
	streamable.handshake(t)
	waitUntil(t, "the GET stream", func() bool { return s.gets.Load() == 1 })
	slow := openHTTP(t, srv.URL+"/slow", config.TransportStreamableHTTP, 1<<20)
	slow.write(t, listTools) // its answer never comes
	sse := openHTTP(t, srv.URL+"/sse", config.TransportSSE, 1<<20)
	sse.write(t, listTools)
	for _, ts := range []*testStream{streamable, slow, sse} {
		ts.Close()
	}
	// A goroutine Close waited for may still be returning, as goleak
	// allows for: give it a moment to be gone.
	deadline := time.Now().Add(await.Slow * 5 * time.Second)
	for g := streamGoroutines(); len(g) > 0; g = streamGoroutines() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after Close:\n%s", len(g), strings.Join(g, "\n\n"))
		}
		runtime.Gosched()
	}
}

// A call the Conn gave up on (it wrote notifications/cancelled) stops
// reading its answer: the server sees the POST go.
func TestCancelledCallStopsItsPost(t *testing.T) {
	for _, kind := range []config.Transport{config.TransportStreamableHTTP, config.TransportSSE} {
		t.Run(string(kind), func(t *testing.T) {
			started, gone := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet { // legacy SSE's stream
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: endpoint\ndata: /\n\n")
					w.(http.Flusher).Flush()
					<-r.Context().Done()
					return
				}
				body, _ := io.ReadAll(r.Body)
				if !bytes.Contains(body, []byte(`"tools/call"`)) {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, ": working\n\n")
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done()
				close(gone)
			}))
			t.Cleanup(srv.Close)
			ts := openHTTP(t, srv.URL, kind, 1<<20)
			ts.write(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
			<-started
			ts.write(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"timed out"}}`)
			select {
			case <-gone:
			case <-time.After(time.Minute): // bounds a hang, not a timing
				t.Fatal("the POST of the cancelled call goes on")
			}
		})
	}
}

// A refusal keeps the Authorization header the refused request carried,
// for the token source to tell which token was refused, and does not
// show it.
func TestHTTPErrorKeepsTheRefusedAuthorization(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	req.Header.Set("Authorization", "Bearer at-1")
	he := newHTTPError(&http.Response{StatusCode: http.StatusUnauthorized, Request: req, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("expired"))})
	if he.Authorization != "Bearer at-1" || strings.Contains(he.Error(), "at-1") {
		t.Errorf("%+v: %s", he, he.Error())
	}
}
