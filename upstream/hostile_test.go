package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A Streamable HTTP upstream that misbehaves in the answer to one call
// (a body that never ends or never comes, an error page without end, a
// sign-in asked for mid-session, a redirect in circles) fails that call
// within its timeout, and the next call is answered.
func TestHTTPHostileAnswerFailsTheCallInTime(t *testing.T) {
	t.Parallel()
	endless := func(w http.ResponseWriter, r *http.Request, prefix string) {
		io.WriteString(w, prefix)
		w.(http.Flusher).Flush()
		chunk := bytes.Repeat([]byte(" "), 1<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond) // a slow drip, under any size limit for a while
		}
	}
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
	}{
		{"JSON body that never ends", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			endless(w, r, `{"jsonrpc":"2.0","id":`)
		}},
		{"JSON body that never comes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
		{"SSE answer that never comes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			endless(w, r, ": working\n")
		}},
		{"SSE event that never ends", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			endless(w, r, "data: {")
		}},
		{"500 with an endless page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			endless(w, r, "<html>")
		}},
		{"401 mid-session", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "no", http.StatusUnauthorized)
		}},
		{"redirect in circles", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		}},
		{"no content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			endless(w, r, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its call's timeout, on an upstream of its own
			u, srv := newHTTPUpstream(t)
			hostile := true
			u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				u.mu.Lock()
				h := hostile
				u.mu.Unlock()
				if !h || !bytes.Contains(body, []byte(`"tools/call"`)) {
					return false
				}
				tc.serve(w, r)
				return true
			}
			_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, "max_message_size: 1048576"))
			await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
			// The drip of an endless body reaches max_message_size in about
			// a second: well within it, the timeout is what ends the call.
			const timeout = 300 * time.Millisecond
			start := time.Now()
			res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"echo"}`), timeout)
			if took := time.Since(start); took > timeout+2*time.Second*await.Slow { // a margin for a loaded machine
				t.Errorf("the call returned after %s, its timeout %s", took, timeout)
			}
			if err == nil {
				t.Fatalf("the call was answered: %s", res)
			}
			t.Logf("the call failed: %v", err)
			u.mu.Lock()
			hostile = false
			u.mu.Unlock()
			// The connection may be dropped for it and made again: the
			// upstream answers again soon.
			start = time.Now()
			for {
				res, err = s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"echo"}`), 5*time.Second)
				if err == nil && strings.Contains(string(res), "ok") {
					break
				}
				if time.Since(start) > 15*time.Second*await.Slow { // bounds a hang: it returns once answered
					t.Fatalf("no call answered within %s: %s, %v", 15*time.Second*await.Slow, res, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("answered again after %s", time.Since(start))
		})
	}
}

// A server that answers one call with an HTTP error (a tool that crashed
// into a 500, a 400 for its arguments) is up: the other calls in flight
// on its session go on and are answered, the session is not dropped.
// (502, 503 and 504 say it is not there: cmd's
// TestRemoteUpstreamSessionExpiryAndOutage.)
func TestHTTPErrorOfOneCallLeavesTheOthers(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadRequest, http.StatusUnprocessableEntity} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			u, srv := newHTTPUpstream(t)
			slowStarted, release := make(chan struct{}), make(chan struct{})
			u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				switch {
				case bytes.Contains(body, []byte(`"boom"`)):
					http.Error(w, "internal error", status)
					return true
				case bytes.Contains(body, []byte(`"slow"`)):
					close(slowStarted)
					<-release
				}
				return false
			}
			_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
			await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
			slow := make(chan error, 1)
			go func() {
				_, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"slow"}`), 10*time.Second)
				slow <- err
			}()
			<-slowStarted
			if _, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"boom"}`), 10*time.Second); err == nil {
				t.Fatal("the call the server refused was answered")
			}
			close(release)
			if err := <-slow; err != nil {
				t.Errorf("the other call in flight: %v", err)
			}
			if st := s.Status(); st.State != StateReady {
				t.Errorf("status after one call's HTTP %d: %v %v", status, st.State, st.Err)
			}
		})
	}
}
