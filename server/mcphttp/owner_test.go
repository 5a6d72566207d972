package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

const (
	tokenA = "token-of-client-a-0123"
	tokenB = "token-of-client-b-0123"
)

// ownedFace serves a hub's HTTP face with two named credentials, a and b.
func ownedFace(t *testing.T, args ...string) (*Server, *httptest.Server) {
	face := New(fakeHub(t, args...), Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	return face, ts
}

// call sends one HTTP request with token and session (if not empty) and
// returns its status, session header and body.
func call(t *testing.T, method, url, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(headerSessionID, session)
	}
	ctx, cancel := context.WithTimeout(t.Context(), await.Slow*10*time.Second) // bounds a hang
	defer cancel()
	resp, err := testClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(headerSessionID), string(b)
}

// A session belongs to the credential that initialized it (issue 20,
// finding 1): another credential presenting its id gets 404, exactly what
// an unknown id gets, whatever the method: POST of any JSON-RPC message
// (tasks/* included), GET, DELETE. The owner's session goes on.
func TestHTTPSessionBelongsToItsCredential(t *testing.T) {
	t.Parallel()
	face, ts := ownedFace(t)
	url := ts.URL + "/mcp"
	code, session, body := call(t, http.MethodPost, url, tokenA, "", initializeMsg)
	if code != http.StatusOK || session == "" {
		t.Fatalf("a's initialize: %d %q %s", code, session, body)
	}
	if code, _, body := call(t, http.MethodPost, url, tokenA, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("a's initialized: %d %s", code, body)
	}
	// a's standalone stream, open while b tries.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, session)
	stream, err := testClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("a's GET stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	await.For(t, 5*time.Second, "a's GET stream", func() bool { return face.sessions.lookup(session).hasStandalone() })

	unknownCode, _, unknownBody := call(t, http.MethodPost, url, tokenB, "00000000000000000000000000000000", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if unknownCode != http.StatusNotFound {
		t.Fatalf("an unknown id: %d %s", unknownCode, unknownBody)
	}
	for _, try := range []struct{ method, body string }{
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"b was here"}}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"f~1"}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"f~1"}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"f~1"}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{}}}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		code, _, body := call(t, try.method, url, tokenB, session, try.body)
		// The answer names the request's id (none for a notification or an
		// answer); otherwise it is the unknown id's, byte for byte.
		if code != http.StatusNotFound || (try.method == http.MethodPost && errorOf(body) != errorOf(unknownBody)) {
			t.Errorf("b's %s %.60s with a's session: %d %s; want 404 as for an unknown id (%s)", try.method, try.body, code, body, unknownBody)
		}
	}
	// a's session is a's still: its stream open, its calls answered, and
	// only a ends it.
	if hs := face.sessions.lookup(session); hs == nil || !hs.hasStandalone() {
		t.Error("a's session or its GET stream ended by b's tries")
	}
	if code, _, body := call(t, http.MethodPost, url, tokenA, session, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"a's"}}}`); code != http.StatusOK || !strings.Contains(body, "a's") {
		t.Errorf("a's call after b's tries: %d %s", code, body)
	}
	if code, _, body := call(t, http.MethodDelete, url, tokenA, session, ""); code != http.StatusOK {
		t.Errorf("a's DELETE: %d %s", code, body)
	}
}

// Legacy SSE: a POST to /message?sessionId= of another credential's
// session is 404, as for an unknown one; the owner's is taken.
func TestHTTPLegacySessionBelongsToItsCredential(t *testing.T) {
	t.Parallel()
	_, ts := ownedFace(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a's /sse: %v %v", err, resp)
	}
	defer resp.Body.Close()
	endpoint := ""
	for sc := bufio.NewScanner(resp.Body); endpoint == "" && sc.Scan(); {
		if e, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			endpoint = e
		}
	}
	if !strings.HasPrefix(endpoint, "/message?sessionId=") {
		t.Fatalf("endpoint %q", endpoint)
	}
	unknown, _, _ := call(t, http.MethodPost, ts.URL+"/message?sessionId=00000000000000000000000000000000", tokenB, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	for _, body := range []string{initializeMsg, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if code, _, got := call(t, http.MethodPost, ts.URL+endpoint, tokenB, "", body); code != http.StatusNotFound || code != unknown {
			t.Errorf("b's POST %.40s to a's session: %d %s; want 404 as for an unknown id (%d)", body, code, got, unknown)
		}
	}
	if code, _, got := call(t, http.MethodPost, ts.URL+endpoint, tokenA, "", initializeMsg); code != http.StatusAccepted {
		t.Errorf("a's POST to its session: %d %s", code, got)
	}
}

// errorOf is the error member of a JSON-RPC answer, as sent.
func errorOf(body string) string {
	var m struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return string(m.Error)
}
