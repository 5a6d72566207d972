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

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// syncBuffer is a log sink the transports write to from their goroutines.
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

// newHTTPTransport is NewHTTP for url, with its log in the returned buffer.
func newHTTPTransport(t *testing.T, url string, kind config.Transport, limit int) (mcptransport.Interface, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr, err := NewHTTP(&config.Server{URL: url, Transport: kind}, config.ServerSettings{ConnectTimeout: 5 * time.Second, MaxMessageSize: limit}, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, logs
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

func listTools(ctx context.Context, tr mcptransport.Interface) (*mcptransport.JSONRPCResponse, error) {
	return tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/list"})
}

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

func TestHTTPResponseOverTheLimitFails(t *testing.T) {
	const limit = 1 << 20
	const want = "upstream response over the 1048576 byte limit (settings.max_message_size)"
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		check   func(err error) bool
	}{
		{"one byte over", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(result(limit + 1))
		}, func(err error) bool { return errors.Is(err, ErrTooLarge) && strings.Contains(err.Error(), want) }},
		{"endless", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusOK, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
		}, func(err error) bool { return errors.Is(err, ErrTooLarge) && strings.Contains(err.Error(), want) }},
		// mcp-go reads an error page whole into its error.
		{"endless error page", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusBadGateway, "text/html", "")
		}, func(err error) bool {
			return errors.Is(err, ErrTooLarge) &&
				strings.Contains(err.Error(), "upstream response (HTTP 502) over the 1048576 byte limit (settings.max_message_size)")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			tr, _ := newHTTPTransport(t, srv.URL, config.TransportStreamableHTTP, limit)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var err error
			start := time.Now()
			held := allocated(func() { _, err = listTools(ctx, tr) })
			if !tc.check(err) {
				t.Fatalf("call: %v", short(fmt.Sprint(err)))
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the call took %s to fail", took)
			}
			if held > 64<<20 {
				t.Errorf("the call allocated %d MiB", held>>20)
			}
		})
	}
}

func TestHTTPEventOverTheLimitFailsTheStream(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endless(w, r, http.StatusOK, "text/event-stream", "event: message\ndata: ")
	}))
	t.Cleanup(srv.Close)
	tr, logs := newHTTPTransport(t, srv.URL, config.TransportStreamableHTTP, limit)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var err error
	held := allocated(func() { _, err = listTools(ctx, tr) })
	const want = "upstream SSE event over the 1048576 byte limit (settings.max_message_size)"
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), want) || ctx.Err() != nil {
		t.Fatalf("call: %v", err)
	}
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say why:\n%s", logs)
	}
	if held > 64<<20 {
		t.Errorf("the call allocated %d MiB", held>>20)
	}
}

func TestHTTPMessagesWithinTheLimitPassWhole(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit, size int
		events      bool
	}{
		{"JSON of 5 MiB, limit 10 MiB", 10 << 20, 5 << 20, false},
		// Two events of 600 KiB before the response: more than the
		// limit in all, within it each.
		{"SSE events of 600 KiB, limit 1 MiB", 1 << 20, 600 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := result(tc.size)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tc.events {
					w.Header().Set("Content-Type", "application/json")
					w.Write(big)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 2 {
					fmt.Fprintf(w, "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\r\ndata: \"params\":{\"level\":\"info\",\"data\":\"%d%s\"}}\r\n\r\n",
						i, strings.Repeat("n", tc.size))
				}
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", big)
			}))
			t.Cleanup(srv.Close)
			tr, _ := newHTTPTransport(t, srv.URL, config.TransportStreamableHTTP, tc.limit)
			var notes atomic.Int32
			tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
				if data, _ := n.Params.AdditionalFields["data"].(string); len(data) == tc.size+1 {
					notes.Add(1)
				}
			})
			resp, err := listTools(t.Context(), tr)
			if err != nil {
				t.Fatal(short(err.Error()))
			}
			var want struct{ Result json.RawMessage }
			json.Unmarshal(big, &want)
			if !bytes.Equal(resp.Result, want.Result) {
				t.Errorf("result of %d bytes, want %d", len(resp.Result), len(want.Result))
			}
			if n := notes.Load(); tc.events && n != 2 {
				t.Errorf("%d whole notifications, want 2", n)
			}
		})
	}
}

func TestSSEEventOverTheLimitEndsTheConnection(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endless(w, r, http.StatusOK, "text/event-stream", "event: endpoint\ndata: /message\n\nevent: message\ndata: ")
	}))
	t.Cleanup(srv.Close)
	tr, _ := newHTTPTransport(t, srv.URL, config.TransportSSE, limit)
	lost := make(chan error, 1)
	tr.(interface{ SetConnectionLostHandler(func(error)) }).SetConnectionLostHandler(func(err error) { lost <- err })
	select {
	case err := <-lost:
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("connection lost: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the SSE connection was not ended")
	}
}

// legacyServer is a Streamable HTTP server of protocol version 2025-11-25
// that knows nothing of server/discover; get serves its GET stream.
type legacyServer struct {
	get     func(w http.ResponseWriter, r *http.Request)
	gets    atomic.Int32
	mu      sync.Mutex
	headers http.Header      // of the last GET
	posted  []map[string]any // messages posted that are not requests
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
	case "server/discover":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id)
	case "initialize":
		w.Header().Set(mcptransport.HeaderKeySessionID, "session-1")
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

// connect runs the handshake over NewHTTP as the hub does, with a request
// handler in place.
func connect(t *testing.T, url string, limit int, onRequest mcptransport.RequestHandler) (*client.Client, mcptransport.Interface, *syncBuffer) {
	t.Helper()
	tr, logs := newHTTPTransport(t, url, config.TransportStreamableHTTP, limit)
	return handshake(t, tr, onRequest), tr, logs
}

func handshake(t *testing.T, tr mcptransport.Interface, onRequest mcptransport.RequestHandler) *client.Client {
	t.Helper()
	c := client.NewClient(tr)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if onRequest != nil {
		tr.(mcptransport.BidirectionalInterface).SetRequestHandler(onRequest)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLegacySessionGetsTheGETStream(t *testing.T) {
	s := &legacyServer{}
	s.get = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": a comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"method\":\"roots/list\"}\r\n\r\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var asked atomic.Int32
	c, tr, _ := connect(t, srv.URL, 1<<20, func(_ context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		asked.Add(1)
		return mcptransport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"roots":[]}`)), nil
	})
	if v := c.ProtocolVersion(); v != "2025-11-25" {
		t.Fatalf("protocol version %q", v)
	}
	listChanged := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tools/list_changed" {
			listChanged <- struct{}{}
		}
	})
	select {
	case <-listChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed from the GET stream")
	}
	waitUntil(t, "the answer to roots/list", func() bool { return s.answered(7) != nil })
	if got := s.answered(7)["result"]; fmt.Sprint(got) != "map[roots:[]]" || asked.Load() != 1 {
		t.Errorf("answer %v, asked %d times", got, asked.Load())
	}
	h := s.lastGet()
	if h.Get(mcptransport.HeaderKeySessionID) != "session-1" || h.Get(mcptransport.HeaderKeyProtocolVersion) != "2025-11-25" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("GET headers: %v", h)
	}
	start := time.Now()
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %s", took)
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
	var tr mcptransport.Interface
	var logs *syncBuffer
	held := allocated(func() {
		_, tr, logs = connect(t, srv.URL, limit, nil)
		// The stream fails, and is opened again a second later.
		waitUntil(t, "the GET stream to be opened again", func() bool { return s.gets.Load() >= 2 })
	})
	if !strings.Contains(logs.String(), "upstream SSE event over the 1048576 byte limit (settings.max_message_size)") {
		t.Errorf("the log does not say why the stream failed:\n%s", logs)
	}
	if held > 64<<20 {
		t.Errorf("allocated %d MiB", held>>20)
	}
	if _, err := listTools(t.Context(), tr); err != nil {
		t.Errorf("a request after the stream failed: %v", err)
	}
}

func TestNoGETStreamWhereTheServerHasNone(t *testing.T) {
	s := &legacyServer{}
	s.get = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	_, tr, _ := connect(t, srv.URL, 1<<20, nil)
	waitUntil(t, "the GET", func() bool { return s.gets.Load() == 1 })
	time.Sleep(1500 * time.Millisecond) // past listenRetryMin
	if n := s.gets.Load(); n != 1 {
		t.Errorf("%d GETs after a 405", n)
	}
	if _, err := listTools(t.Context(), tr); err != nil {
		t.Errorf("a request: %v", err)
	}
}

// mcpgoUpstream is mcp-go's own server over Streamable HTTP, offering the
// given protocol versions (all it knows when none), counting GETs.
func mcpgoUpstream(t *testing.T, versions ...string) (*mcpserver.MCPServer, *httptest.Server, *atomic.Int32) {
	s := mcpserver.NewMCPServer("mcp-go", "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("hello"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(versions...))
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

// An mcp-go server of the newest version, or of the one before, is spoken
// to in 2025-11-25 (legacyOnly), and its notifications reach the hub while
// no request is in flight.
func TestMCPGoServerNotifiesWhileIdle(t *testing.T) {
	for _, versions := range [][]string{nil, {mcp.LATEST_LEGACY_PROTOCOL_VERSION}} {
		t.Run(fmt.Sprint(versions), func(t *testing.T) {
			s, srv, gets := mcpgoUpstream(t, versions...)
			c, _, _ := connect(t, srv.URL+"/mcp", 1<<20, nil)
			if v := c.ProtocolVersion(); v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
				t.Fatalf("protocol version %q", v)
			}
			var listChanged atomic.Int32
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationToolsListChanged) {
					listChanged.Add(1)
				}
			})
			waitUntil(t, "the GET stream", func() bool { return gets.Load() >= 1 })
			// No request is in flight: the notification can only come on
			// the GET stream. That may open after the first tool is
			// added: add more.
			for i := 0; listChanged.Load() == 0; i++ {
				if i == 100 {
					t.Fatal("no list_changed while idle")
				}
				s.AddTool(mcp.NewTool(fmt.Sprintf("t%d", i)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Without legacyOnly, a connection takes 2026-07-28, which has no GET
// stream.
func TestNoGETStreamOn20260728(t *testing.T) {
	_, srv, gets := mcpgoUpstream(t)
	hc := newHTTPClient(1 << 20)
	inner, err := mcptransport.NewStreamableHTTP(srv.URL+"/mcp", mcptransport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	tr := newStreamable(inner, srv.URL+"/mcp", hc, nil, nil, false, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { tr.Close() })
	c := handshake(t, tr, nil)
	if v := c.ProtocolVersion(); !mcp.IsModernProtocol(v) {
		t.Errorf("protocol version %q, want %s or later", v, mcp.ProtocolVersion20260728)
	}
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "hello"}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("call: %v %v", res, err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := gets.Load(); n != 0 {
		t.Errorf("%d GETs on a 2026-07-28 connection", n)
	}
}
