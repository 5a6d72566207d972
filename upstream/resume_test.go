package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A call whose answer stream the server ends after a priming event (an id,
// a retry field) is answered from the GET that resumes it with
// Last-Event-ID; meanwhile the other calls on the session are answered,
// and the session stays the one it was.
func TestCallResumedAfterTheServerEndsItsStream(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	callID := make(chan json.RawMessage, 1)
	resumed, release := make(chan string, 1), make(chan struct{})
	u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if !bytes.Contains(body, []byte(`"poll"`)) {
			return false
		}
		callID <- jsonrpc.Field(body, "id")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: e1\nretry: 50\ndata: \n\n")
		return true
	}
	u.onGet = func(w http.ResponseWriter, r *http.Request) bool {
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			return false
		}
		resumed <- last
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: %s\n\n", jsonrpc.EncodeResult(<-callID, json.RawMessage(`{"content":[{"type":"text","text":"resumed"}]}`)))
		return true
	}
	_, s := startHTTP(t, httpConfig(t, srv.URL+"/mcp", config.TransportStreamableHTTP, ""))
	await.For(t, 10*time.Second, "the upstream to be ready", func() bool { return s.Status().State == StateReady })
	polled := make(chan string, 1)
	go func() {
		res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"poll"}`), 10*time.Second)
		polled <- fmt.Sprintf("%s %v", res, err)
	}()
	if last := <-resumed; last != "e1" {
		t.Errorf("resumed with Last-Event-ID %q, want e1", last)
	}
	if res, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"echo"}`), 5*time.Second); err != nil || !strings.Contains(string(res), "ok") {
		t.Errorf("another call while one is resumed: %s, %v", res, err)
	}
	close(release)
	if got := <-polled; !strings.Contains(got, "resumed") {
		t.Fatalf("the resumed call: %s", got)
	}
	u.mu.Lock()
	sessions := u.sessions
	u.mu.Unlock()
	if st := s.Status(); st.State != StateReady || sessions != 1 {
		t.Errorf("after the resumed call: %v %v, %d sessions", st.State, st.Err, sessions)
	}
}

// A call whose answer stream ends early without an event id fails alone:
// another call in flight on the same session is answered, and the
// session is not dropped.
func TestStreamEndedWithoutIDFailsThatCallAlone(t *testing.T) {
	t.Parallel()
	u, srv := newHTTPUpstream(t)
	slowStarted, release := make(chan struct{}), make(chan struct{})
	u.onPost = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		switch {
		case bytes.Contains(body, []byte(`"cut"`)):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
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
	_, err := s.Request(t.Context(), nil, "tools/call", json.RawMessage(`{"name":"cut"}`), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "without answering") {
		t.Fatalf("the cut call: %v", err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("the other call in flight: %v", err)
	}
	u.mu.Lock()
	sessions := u.sessions
	u.mu.Unlock()
	if st := s.Status(); st.State != StateReady || sessions != 1 {
		t.Errorf("after one call's stream ended early: %v %v, %d sessions", st.State, st.Err, sessions)
	}
}
