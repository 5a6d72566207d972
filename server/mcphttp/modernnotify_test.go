package mcphttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// postAs POSTs body to the face at base with token (none when ""), with
// the headers of a 2026-07-28 message of method, and returns the status
// and the body of the answer.
func postAs(ctx context.Context, base, token, method, body string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name := jsonrpc.Field(jsonrpc.Field([]byte(body), "params"), "name"); name != nil {
		req.Header.Set("Mcp-Name", strings.Trim(string(name), `"`))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// A notification of 2026-07-28 comes without a session, with or without
// _meta (go-sdk sends none): it is accepted (202), never answered 400 for
// the session it has not got, and no session is minted for it.
func TestModernNotificationsAccepted(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTPWith(t, h, Options{})
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"context canceled"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"unknown",` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,` + modernMeta + `}}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerProtocolVersion, "2026-07-28")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || len(b) != 0 || resp.Header.Get(headerSessionID) != "" {
			t.Errorf("%s: %d %s %v", body, resp.StatusCode, b, resp.Header)
		}
	}
}

// A cancellation of 2026-07-28 ends the request it names of the caller
// who sent it, and no other caller's: b's cancel of "7" leaves a's call 7
// to finish, a's own cancel of its call 8 ends that call at once (its
// POST answered 202, no answer, as a cancelled request is) and the
// upstream is told.
func TestModernCancelEndsTheCallersRequestOnly(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	call := func(id, ms string) <-chan string {
		done := make(chan string, 1)
		go func() {
			status, body, err := postAs(ctx, ts.URL, tokenA, "tools/call",
				`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":`+ms+`},`+modernMeta+`}}`)
			done <- strings.Join([]string{http.StatusText(status), body, errString(err)}, " ")
		}()
		return done
	}
	cancelAs := func(token, id string) {
		t.Helper()
		status, body, err := postAs(ctx, ts.URL, token, "notifications/cancelled", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)
		if status != http.StatusAccepted || err != nil {
			t.Fatalf("cancel of %s: %d %s %v", id, status, body, err)
		}
	}

	first := call("7", "1500")
	upstreamState(ctx, t, ts.URL, tokenA, `\"sleeping\":1`)
	cancelAs(tokenB, "7")
	if got := <-first; !strings.Contains(got, "slept 1500") {
		t.Errorf("a's call after b's cancel: %s", got)
	}

	second := call("8", "600000")
	upstreamState(ctx, t, ts.URL, tokenA, `\"sleeping\":2`)
	cancelAs(tokenA, "8")
	select {
	case got := <-second:
		if !strings.HasPrefix(got, "Accepted") || strings.Contains(got, "slept") {
			t.Errorf("a's cancelled call: %s", got)
		}
	case <-ctx.Done():
		t.Fatal("a's cancel did not end its call")
	}
	upstreamState(ctx, t, ts.URL, tokenA, `\"cancelled\":[`) // the upstream was told
}

// upstreamState waits until the fake upstream's state, asked for with
// token, says want.
func upstreamState(ctx context.Context, t *testing.T, base, token, want string) {
	t.Helper()
	await.For(t, 10*time.Second, "the upstream's state to say "+want, func() bool {
		_, body, _ := postAs(ctx, base, token, "tools/call", `{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"f__state","arguments":{},`+modernMeta+`}}`)
		return strings.Contains(body, want)
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// cancelWatch serves next and keeps the status of each
// notifications/cancelled POSTed to it.
type cancelWatch struct {
	next   http.Handler
	mu     sync.Mutex
	status []int
}

func (c *cancelWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		c.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	c.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	c.mu.Lock()
	c.status = append(c.status, rec.Code)
	c.mu.Unlock()
}

func (c *cancelWatch) seen() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.status...)
}

// go-sdk's client (v1.8.0) on 2026-07-28 over HTTP cancels a call with a
// notifications/cancelled POST of its own, without a session or _meta,
// and closes on a refusal of it: the hub accepts it (202), and the client
// goes on with its next call. Before, the hub answered 400 ("Mcp-Session-Id
// header is required") and every later call failed "client is closing".
func TestGoSDKClientCancelsAndGoesOn(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""), nil)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA}}, testLogger())
	watch := &cancelWatch{next: face}
	ts := httptest.NewServer(watch)
	t.Cleanup(func() { ts.Close(); face.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-cancel", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer(tokenA)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client speaks %s", v)
	}

	callCtx, stop := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: "f__sleep", Arguments: map[string]any{"ms": 600000}})
		failed <- err
	}()
	upstreamState(ctx, t, ts.URL, tokenA, `\"sleeping\":1`)
	stop()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call: %v", err)
	}
	await.For(t, 10*time.Second, "the client's cancel", func() bool { return len(watch.seen()) == 1 })
	if s := watch.seen(); s[0] != http.StatusAccepted {
		t.Errorf("the cancel was answered %d", s[0])
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "f__echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "still here" {
		t.Fatalf("the next call: %+v %v", res, err)
	}
}
