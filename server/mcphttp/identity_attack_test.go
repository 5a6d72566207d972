package mcphttp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A forged token's kid is the attacker's text: one that reads like the
// hub's own errors ("the issuer's keys cannot be fetched", "expected
// audience") is still a forged token, counted toward max_auth_failures:
// 401s, then 429, never 503.
func TestForgedKidsAreCounted(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	g := httpguard.NewGuard(httpguard.GuardOptions{Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}, MaxAuthFailures: 3})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forge := func(kid string) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: ec, KeyID: kid}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"iss": is.srv.URL, "sub": "alice", "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix()})
		obj, _ := s.Sign(b)
		out, _ := obj.CompactSerialize()
		return out
	}
	kids := []string{"identity: the issuer's keys cannot be fetched", "expected audience"}
	var codes []int
	for i := range 30 {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.RemoteAddr = "192.0.2.7:1234"
		req.Header.Set("Authorization", "Bearer "+forge(kids[i%2]))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		codes = append(codes, w.Code)
	}
	for i, code := range codes {
		if want := http.StatusUnauthorized; i >= 3 {
			want = http.StatusTooManyRequests
			if code != want {
				t.Fatalf("forged tokens: %v, want 3 401s then 429", codes)
			}
		} else if code != want {
			t.Fatalf("forged tokens: %v, want 3 401s then 429", codes)
		}
	}
}

// A token whose subject differs from Alice's only by a control character
// (or by what lies past what is shown of a long one) is not Alice: it
// cannot use her session, and is refused as the issuer's own token.
func TestLookalikeSubjectsAreNotTheUser(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, _, _ := identityHub(t, is)
	long := strings.Repeat("a", 300)
	for _, c := range []struct{ victim, intruder string }{{"alice", "alice\x01"}, {long, long[:299] + "b"}} {
		victim := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, c.victim, "", testAudience)}
		if code := victim.initialize(); code != http.StatusOK {
			t.Fatalf("initialize %q: %d", c.victim, code)
		}
		intruder := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, c.intruder, "", testAudience), session: victim.session}
		if resp, got := intruder.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode == http.StatusOK {
			t.Errorf("sub %q used the session of %q: %d %s", c.intruder, c.victim, resp.StatusCode, got)
		}
	}
}

// Two users signed in with JWTs, without sessions (2026-07-28), are two
// callers even where clients have no shares (client_share 100%): Bob
// cannot resume the call the hub held for Alice with her requestState.
func TestSessionlessUsersApartWithoutShares(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	face := New(fakeHub(t), Options{Tokens: map[string]string{"ci": "static-token-0123456789"}, ClientShare: 1,
		Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	alice, bob := is.token(t, "alice", "Alice", testAudience), is.token(t, "bob", "Bob", testAudience)
	post := func(token, body string) string {
		t.Helper()
		return postSessionless(t, ts.URL, token, "tools/call", "f__ask", body)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id, more string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__ask","arguments":{}` + more + `,` + meta + `}}`
	}
	var first struct {
		Result struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	body := post(alice, call("1", ""))
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.Result.ResultType != "input_required" {
		t.Fatalf("alice's call: %v %s", err, body)
	}
	retry := call("2", `,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Eve"}}},"requestState":"`+first.Result.RequestState+`"`)
	if body = post(bob, retry); !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "issued to another") {
		t.Errorf("bob's retry with alice's requestState: %s", body)
	}
	if body = post(alice, retry); !strings.Contains(body, "Eve") {
		t.Errorf("alice's retry: %s", body)
	}
}

// The same for a result cut to max_result: Bob, without a session, cannot
// read the one kept for Alice's call.
func TestSessionlessUsersStoredResultsApart(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s, max_result: 20KB", `    args: ["-large"]`+"\n"), nil)
	face := New(h, Options{Tokens: map[string]string{"ci": "static-token-0123456789"}, ClientShare: 1,
		Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(token, method, name, body string) string {
		t.Helper()
		return postSessionless(t, ts.URL, token, method, name, body)
	}
	alice, bob := is.token(t, "alice", "Alice", testAudience), is.token(t, "bob", "Bob", testAudience)
	body := post(alice, "tools/call", "f__large", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__large","arguments":{"text":"text","ms":300000},`+meta+`}}`)
	uri := regexp.MustCompile(`dynamic-mcp://results/[A-Za-z0-9_-]+`).FindString(body)
	if uri == "" {
		t.Fatalf("no link in alice's answer: %.500s", body)
	}
	read := func(token string) string {
		return post(token, "resources/read", uri, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"`+uri+`",`+meta+`}}`)
	}
	if got := read(alice); !strings.Contains(got, `"contents"`) {
		t.Fatalf("alice reads her result: %.300s", got)
	}
	if got := read(bob); !strings.Contains(got, `"error"`) || strings.Contains(got, `"contents"`) {
		t.Errorf("bob read alice's result: %.300s", got)
	}
}

// postSessionless posts body, a 2026-07-28 request (no session) of
// method on name, to base's /mcp with token, and returns the answer's
// body, whatever its status.
func postSessionless(t *testing.T, base, token, method, name, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
