package transport

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A server that redirects a request to another origin does not get the
// hub to send it there, with the configured headers (an API key) and the
// message: as the legacy endpoint event, a redirect stays on the origin.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	var reached atomic.Int32
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		leaked.Store(r.Header.Get("X-Api-Key"))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: /\n\n")
	}))
	t.Cleanup(elsewhere.Close)
	for _, kind := range []config.Transport{config.TransportStreamableHTTP, config.TransportSSE} {
		t.Run(string(kind), func(t *testing.T) {
			reached.Store(0)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
			}))
			t.Cleanup(srv.Close)
			cfg := &config.Server{URL: srv.URL, Transport: kind, Headers: map[string]string{"X-Api-Key": "secret"}}
			s, err := NewHTTP(t.Context(), cfg, config.ServerSettings{ConnectTimeout: 5 * time.Second, MaxMessageSize: 1 << 20}, nil, slog.New(slog.DiscardHandler))
			if err == nil {
				t.Cleanup(func() { s.Close() })
				if err := s.Write(t.Context(), []byte(listTools)); err == nil {
					if msg, err := s.Read(); err == nil {
						t.Fatalf("the redirected call was answered: %s", msg)
					}
				}
			}
			if n := reached.Load(); n != 0 {
				t.Fatalf("the other origin was reached %d times (X-Api-Key %q)", n, leaked.Load())
			}
		})
	}
}

// A call whose answer came on an SSE stream that the server keeps open
// after it stops reading it: the connection and the goroutine are let go,
// not held until the upstream is closed.
func TestAnswerStreamLetGoOnceAnswered(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	ts := openHTTP(t, srv.URL, config.TransportStreamableHTTP, 1<<20)
	ts.write(t, listTools)
	if r := ts.next(t); r.err != nil || !strings.Contains(string(r.msg), `"result"`) {
		t.Fatalf("read %s %v", r.msg, r.err)
	}
	select {
	case <-gone:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the answer stream is still read after its answer")
	}
}
