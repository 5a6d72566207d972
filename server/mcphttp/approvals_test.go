package mcphttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// A 2026-07-28 call over HTTP without Mcp-Session-Id, from a client that
// cannot elicit, waits in the approval inbox; its caller is the
// credential, so a session grant for it would never end: it is refused,
// saying what to give instead, and a grant for N calls is taken.
func TestApprovalSessionlessGrant(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s, prompt_timeout: 20s", promptPolicy), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"},` + meta + `}}`
	done := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokenA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "f__echo")
		resp, err := testClient.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	var l approval.List
	await.For(t, 5*time.Second, "the call in the inbox", func() bool { l = h.Inbox().Approvals(); return len(l.Pending) == 1 })
	id := l.Pending[0].ID
	if _, err := h.Inbox().Approve(id, "ui", approval.Options{Session: true}); !errors.Is(err, approval.ErrNoSession) ||
		!strings.Contains(err.Error(), "--for or --calls") {
		t.Errorf("a session grant for a sessionless call: %v", err)
	}
	if l = h.Inbox().Approvals(); len(l.Pending) != 1 || len(l.Grants) != 0 {
		t.Errorf("refused, the call still waits and no grant is made: %+v", l)
	}
	g, err := h.Inbox().Approve(id, "ui", approval.Options{Calls: 2})
	if err != nil || g == nil || g.Session != "" {
		t.Fatalf("a grant for 2 calls: %+v %v", g, err)
	}
	if got := <-done; !strings.Contains(got, `"result"`) || strings.Contains(got, `"error"`) {
		t.Errorf("approved: %s", got)
	}
}

// One credential's sessions together wait at most 64 calls in the inbox
// (16 each): a fifth session of that credential is denied at once, saying
// why, while another credential's call still waits for a person.
func TestApprovalInboxSharedByCredentials(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s, prompt_timeout: 20s", promptPolicy), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	url := ts.URL + "/mcp"
	post := func(token, session, body string) (string, string, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			return "", "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get(headerSessionID), string(b), nil
	}
	open := func(token string) string {
		t.Helper()
		session, body, err := post(token, "", initializeMsg)
		if err != nil || session == "" {
			t.Fatalf("initialize: %v %s", err, body)
		}
		if _, _, err := post(token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			t.Fatal(err)
		}
		return session
	}
	echo := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`, id)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the calls are denied below
	wait := func(token, session string, id int) {
		wg.Add(1)
		go func() { defer wg.Done(); _, _, _ = post(token, session, echo(id)) }()
	}
	for s := range 4 {
		session := open(tokenA)
		for i := range 16 {
			wait(tokenA, session, s*16+i)
		}
	}
	await.For(t, 10*time.Second, "64 of a's calls in the inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 64 })
	defer func() {
		for _, p := range h.Inbox().Approvals().Pending {
			_ = h.Inbox().Deny(p.ID, "test")
		}
	}()
	if _, body, err := post(tokenA, open(tokenA), echo(100)); err != nil || !strings.Contains(body, "-32001") ||
		!strings.Contains(body, "64 calls of this credential wait for approval already") {
		t.Errorf("a fifth session of a: %v %s", err, body)
	}
	wait(tokenB, open(tokenB), 200)
	await.For(t, 5*time.Second, "b's call in the inbox", func() bool { return len(h.Inbox().Approvals().Pending) == 65 })
}
