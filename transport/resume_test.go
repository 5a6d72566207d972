package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// pollingServer is a Streamable HTTP server that ends the answer stream
// of tools/call early, as SEP-1699 lets a server do: post writes the
// stream's events before it ends; a GET with Last-Event-ID is served by
// resume (nil: 405). A GET without it (the hub's own GET stream) is 405.
type pollingServer struct {
	post   string
	resume func(w http.ResponseWriter, id json.RawMessage)

	mu      sync.Mutex
	callID  json.RawMessage // of the last tools/call
	ended   time.Time       // when the last answer stream ended
	resumes []resumeSeen
}

// resumeSeen is a GET with Last-Event-ID: the id, and how long after the
// stream before it ended it came.
type resumeSeen struct {
	lastEventID string
	after       time.Duration
}

func (p *pollingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		last := r.Header.Get("Last-Event-ID")
		p.mu.Lock()
		id := p.callID
		if last != "" {
			p.resumes = append(p.resumes, resumeSeen{last, time.Since(p.ended)})
		}
		p.mu.Unlock()
		if last == "" || p.resume == nil || r.Header.Get("Mcp-Session-Id") != "s1" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		p.resume(w, id)
		p.mu.Lock()
		p.ended = time.Now()
		p.mu.Unlock()
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, method := peek(body)
	switch {
	case method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Write(jsonrpc.EncodeResult(id, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"poll","version":"1"}}`)))
	case id == nil:
		w.WriteHeader(http.StatusAccepted)
	case method == "tools/call" && strings.Contains(string(body), `"poll"`):
		p.mu.Lock()
		p.callID = id
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, p.post)
		p.mu.Lock()
		p.ended = time.Now()
		p.mu.Unlock()
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: x1\ndata: %s\n\n", jsonrpc.EncodeResult(id, json.RawMessage(`{"content":[]}`)))
	}
}

func (p *pollingServer) seen() []resumeSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]resumeSeen(nil), p.resumes...)
}

// openPolling is a stream to p after its handshake, its resumes bounded by
// rules.
func openPolling(t *testing.T, p *pollingServer, rules resumeRules) *testStream {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	ts := openHTTP(t, srv.URL, config.TransportStreamableHTTP, 1<<20)
	ts.HTTPStream.(*Streamable).resumeRules = rules
	ts.handshake(t)
	return ts
}

const pollCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll"}}`

// An answer stream the server ends after an event with an id (a priming
// event, then a notification) is resumed with a GET carrying the last
// event id, after the wait its retry field asked for; what the GET brings
// (another notification, the answer) is read as the POST's stream was.
func TestResumeAnswerStreamEndedEarly(t *testing.T) {
	p := &pollingServer{
		post: "id: e1\nretry: 300\ndata: \n\n" +
			"id: e2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"before\"}}\n\n",
		resume: func(w http.ResponseWriter, id json.RawMessage) {
			fmt.Fprintf(w, "id: e3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"after\"}}\n\n")
			fmt.Fprintf(w, "id: e4\ndata: %s\n\n", jsonrpc.EncodeResult(id, json.RawMessage(`{"content":[{"type":"text","text":"resumed"}]}`)))
		},
	}
	ts := openPolling(t, p, resumeRules{})
	ts.write(t, pollCall)
	for _, want := range []string{`"before"`, `"after"`, `"resumed"`} {
		if r := ts.next(t); r.err != nil || !strings.Contains(string(r.msg), want) {
			t.Fatalf("read %s, %v; want %s", r.msg, r.err, want)
		}
	}
	seen := p.seen()
	if len(seen) != 1 || seen[0].lastEventID != "e2" {
		t.Fatalf("resumes: %+v, want one from e2", seen)
	}
	if seen[0].after < 250*time.Millisecond {
		t.Errorf("resumed %s after the stream ended; its retry field asked for 300ms", seen[0].after)
	}
}

// A stream that ends early without an event id cannot be resumed: the
// call fails alone, at once, and the stream goes on.
func TestStreamEndedWithoutIDFailsTheCall(t *testing.T) {
	p := &pollingServer{post: "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n"}
	ts := openPolling(t, p, resumeRules{})
	ts.write(t, pollCall)
	ts.next(t) // the notification
	r := ts.next(t)
	var ce *jsonrpc.CallError
	if !errors.As(r.err, &ce) || string(ce.ID) != "7" || !strings.Contains(r.err.Error(), "without an event id") {
		t.Fatalf("read %s, %v", r.msg, r.err)
	}
	if seen := p.seen(); len(seen) != 0 {
		t.Errorf("resumed without an id: %+v", seen)
	}
	ts.write(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}`)
	if r := ts.next(t); r.err != nil || !strings.Contains(string(r.msg), `"id":8`) {
		t.Fatalf("the next call: %s, %v", r.msg, r.err)
	}
}

// A server that keeps ending the resumed stream with nothing but a new
// priming event is resumed a bounded number of times in a row; then the
// call fails alone. One whose GET is refused fails at once.
func TestResumesAreBounded(t *testing.T) {
	n := 0
	p := &pollingServer{post: "id: e1\ndata: \n\n", resume: func(w http.ResponseWriter, _ json.RawMessage) {
		n++
		fmt.Fprintf(w, "id: g%d\ndata: \n\n", n)
	}}
	ts := openPolling(t, p, resumeRules{wait: 5 * time.Millisecond, tries: 3})
	ts.write(t, pollCall)
	r := ts.next(t)
	var ce *jsonrpc.CallError
	if !errors.As(r.err, &ce) || string(ce.ID) != "7" || !errors.Is(r.err, errResumeStalled) {
		t.Fatalf("read %s, %v", r.msg, r.err)
	}
	seen := p.seen()
	if len(seen) != 3 || seen[0].lastEventID != "e1" || seen[2].lastEventID != "g2" {
		t.Errorf("resumes: %+v, want 3, from e1, g1, g2", seen)
	}

	refused := &pollingServer{post: "id: e1\ndata: \n\n"}
	ts = openPolling(t, refused, resumeRules{wait: 5 * time.Millisecond})
	ts.write(t, pollCall)
	r = ts.next(t)
	var he *HTTPError
	if !errors.As(r.err, &ce) || !errors.As(r.err, &he) || he.Status != http.StatusMethodNotAllowed {
		t.Fatalf("read %s, %v", r.msg, r.err)
	}
	t.Logf("the call failed: %v", r.err)
}
