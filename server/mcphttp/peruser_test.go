package mcphttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// seenCall is a tools/call the protected upstream received: the caller
// its arguments name and the token it carried.
type seenCall struct{ who, token string }

// protectedUpstream is an authorization server (authtest) in front of an
// MCP server with one tool, whoami, that records each call's token.
func protectedUpstream(t *testing.T) (*authtest.Server, func() []seenCall) {
	a := authtest.NewServer(t)
	a.KeepTokens = true
	s := mcpserver.NewMCPServer("protected", "1")
	s.AddTool(mcp.NewTool("whoami", mcp.WithString("who")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello " + req.GetString("who", "")), nil
	})
	inner := mcpserver.NewStreamableHTTPServer(s)
	var mu sync.Mutex
	var seen []seenCall
	a.Resource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Arguments struct {
					Who string `json:"who"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			mu.Lock()
			seen = append(seen, seenCall{m.Params.Arguments.Who, r.Header.Get("Authorization")})
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	})
	return a, func() []seenCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenCall(nil), seen...)
	}
}

// signedInUpstream is protectedUpstream, with the vault's key set, and
// the record of the hub's own sign-in to it (for the server's lists).
func signedInUpstream(t *testing.T) (*authtest.Server, func() []seenCall, *auth.Record) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	a, seen := protectedUpstream(t)
	return a, seen, hubSignIn(t, a)
}

// hubSignIn is the hub's own sign-in to a's resource (auth login's).
func hubSignIn(t *testing.T, a *authtest.Server) *auth.Record {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rec, err := auth.Login(ctx, "docs", a.URL+"/mcp", auth.LoginOptions{Open: func(u string) error {
		go func() {
			if resp, err := testClient.Get(u); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// savedUpstream is signedInUpstream with the record saved in a new state
// directory, dir.
func savedUpstream(t *testing.T) (a *authtest.Server, seen func() []seenCall, dir string) {
	a, seen, rec := signedInUpstream(t)
	dir = t.TempDir()
	if err := auth.NewStore(filepath.Join(dir, "oauth-servers")).Save(rec); err != nil {
		t.Fatal(err)
	}
	return a, seen, dir
}

var signInLink = regexp.MustCompile(`http://[^ "\\]+/auth/start\?server=docs&state=[A-Za-z0-9_-]+`)

// A server with auth: per-user: Alice signs in through the hub's own
// /auth/start link and her calls carry her token; Bob's call asks Bob to
// sign in (-32042 with a link of his own) and never reaches the server
// with Alice's token; once Bob signs in his calls carry his own; a link
// works once; the shared sign-in (the hub's, for the lists) is no one's.
func TestPerUserSignIn(t *testing.T) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	a, seen := protectedUpstream(t)
	dir := t.TempDir()
	// The hub's own sign-in, for the server's lists.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	// A link is opened as a person does: its page, then its button.
	visit := func(u string) (int, string) { return newBrowser("someone").open(t, u) }
	browse := func(u string) {
		if resp, err := testClient.Get(u); err == nil {
			resp.Body.Close()
		}
	}
	rec, err := auth.Login(ctx, "docs", a.URL+"/mcp", auth.LoginOptions{Open: func(u string) error { go browse(u); return nil }, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.NewStore(filepath.Join(dir, "oauth-servers")).Save(rec); err != nil {
		t.Fatal(err)
	}
	operator := "Bearer " + rec.AccessToken

	yaml := flatFakeYAML(dir, "call_timeout: 5s", "    args: []\n") + fmt.Sprintf(`  docs:
    description: a protected server, each user signed in for themselves
    url: %s/mcp
    transport: streamable-http
    auth: per-user
`, a.URL)
	is := newTestIssuer(t)
	yaml = strings.Replace(yaml, "groups:\n", fmt.Sprintf("http: { auth: { issuer: %s, audience: %s } }\ngroups:\n", is.srv.URL, testAudience), 1)
	insp := inspect.New(inspect.Options{})
	t.Cleanup(func() { insp.Close() })
	h, mgr := runHub(t, yaml, insp)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	face := New(h, Options{Tokens: map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "carol": "carol-token-0123456789", "dave": "dave-token-0123456789"},
		Auth: cfg.HTTP.Auth, SignIns: mgr}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })

	alice := &bearerClient{t: t, url: ts.URL + "/mcp", token: "alice-token-0123456789"}
	bob := &bearerClient{t: t, url: ts.URL + "/mcp", token: "bob-token-0123456789"}
	for _, c := range []*bearerClient{alice, bob} {
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
	}
	await.For(t, 10*time.Second, "the per-user server's tools", func() bool {
		_, got := alice.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	call := func(c *bearerClient, who string) string {
		_, got := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"` + who + `"}}}`)
		return strings.ReplaceAll(got, `\u0026`, "&")
	}
	needsSignIn := func(who, got string) string {
		t.Helper()
		link := signInLink.FindString(got)
		if !strings.Contains(got, `"code":-32042`) || !strings.Contains(got, `"mode":"url"`) || link == "" || !strings.HasPrefix(link, ts.URL) {
			t.Fatalf("%s's call before signing in: %s; want -32042 with a URL elicitation of a link to %s/auth/start", who, got, ts.URL)
		}
		return link
	}

	// Alice has not signed in: her call is not made with the hub's token.
	aliceLink := needsSignIn("alice", call(alice, "alice"))
	// The link is in the call's error in the inspector too, for a client
	// that shows neither the elicitation nor the error's message.
	await.For(t, 5*time.Second, "the inspector to show alice's link", func() bool {
		rec := httptest.NewRecorder()
		insp.API().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, inspect.Prefix+"api/export", nil))
		return strings.Contains(strings.ReplaceAll(rec.Body.String(), `\u0026`, "&"), aliceLink)
	})
	if code, body := visit(aliceLink); code != http.StatusOK || !strings.Contains(body, "alice is signed in to docs") {
		t.Fatalf("alice's sign-in: %d %s", code, body)
	}
	if code, _ := visit(aliceLink); code != http.StatusBadRequest {
		t.Errorf("alice's link used twice: %d, want 400", code)
	}
	if got := call(alice, "alice"); !strings.Contains(got, "hello alice") {
		t.Fatalf("alice's call after signing in: %s", got)
	}
	// Bob has not: he is asked to sign in, with a link of his own.
	bobGot := call(bob, "bob")
	bobLink := needsSignIn("bob", bobGot)
	elicitation := regexp.MustCompile(`"elicitationId":"(sign-in-[A-Z2-7]+)"`).FindStringSubmatch(bobGot)
	if elicitation == nil {
		t.Fatalf("no elicitationId in %s", bobGot)
	}
	// His GET stream hears when the sign-in is complete.
	sctx, scancel := context.WithCancel(t.Context())
	defer scancel()
	greq, _ := http.NewRequestWithContext(sctx, http.MethodGet, ts.URL+"/mcp", nil)
	greq.Header.Set("Accept", "text/event-stream")
	greq.Header.Set("Authorization", "Bearer "+bob.token)
	greq.Header.Set(headerSessionID, bob.session)
	gresp, err := testClient.Do(greq)
	if err != nil || gresp.StatusCode != http.StatusOK {
		t.Fatalf("bob's GET stream: %v %v", gresp, err)
	}
	defer gresp.Body.Close()
	completed := make(chan string, 1)
	go func() {
		var all strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := gresp.Body.Read(buf)
			all.Write(buf[:n])
			if strings.Contains(all.String(), "notifications/elicitation/complete") || err != nil {
				completed <- all.String()
				return
			}
		}
	}()
	await.For(t, 5*time.Second, "bob's GET stream to be open", func() bool {
		hs := face.sessions.lookup(bob.session)
		return hs != nil && hs.hasStandalone()
	})
	if bobLink == aliceLink {
		t.Fatal("bob got alice's link")
	}
	// A second session of Alice's shares her sign-in.
	alice2 := &bearerClient{t: t, url: ts.URL + "/mcp", token: alice.token}
	alice2.initialize()
	if got := call(alice2, "alice"); !strings.Contains(got, "hello alice") {
		t.Fatalf("alice's second session: %s", got)
	}
	if code, body := visit(bobLink); code != http.StatusOK || !strings.Contains(body, "bob is signed in to docs") {
		t.Fatalf("bob's sign-in: %d %s", code, body)
	}
	select {
	case got := <-completed:
		if !strings.Contains(got, `"elicitationId":"`+elicitation[1]+`"`) {
			t.Errorf("bob's stream: %s; want elicitation/complete of %s", got, elicitation[1])
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Error("bob's stream heard no notifications/elicitation/complete")
	}
	scancel()
	if got := call(bob, "bob"); !strings.Contains(got, "hello bob") {
		t.Fatalf("bob's call after signing in: %s", got)
	}

	// A 2026-07-28 request without a session is its caller's likewise.
	modern := func(token, who string) string {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"`+who+`"},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "docs__whoami")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.ReplaceAll(string(b), `\u0026`, "&")
	}
	needsSignIn("carol (2026-07-28, no session)", modern("carol-token-0123456789", "carol"))
	if got := modern(alice.token, "alice"); !strings.Contains(got, "hello alice") {
		t.Errorf("alice's 2026-07-28 call without a session: %s", got)
	}

	// A client that answers URL elicitations (go-sdk's, 2026-07-28) is
	// sent the link during the call: once it has signed in, the call
	// goes on with dave's token and succeeds.
	var asked []string
	dc := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-url", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, req.Params.Mode+" "+req.Params.URL)
			if req.Params.Mode != "url" || !signInLink.MatchString(req.Params.URL) {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
			if code, body := visit(req.Params.URL); code != http.StatusOK {
				return nil, fmt.Errorf("sign-in: %d %s", code, body)
			}
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := dc.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer("dave-token-0123456789")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "docs__whoami", Arguments: map[string]any{"who": "dave"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "hello dave" {
		t.Fatalf("dave's call, signing in by URL elicitation: %+v %v (asked %q)", res, err, asked)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "url ") {
		t.Errorf("dave was asked %q; want one URL elicitation", asked)
	}

	// A caller signed in by http.auth (a JWT) is a user likewise.
	erin := &bearerClient{t: t, url: ts.URL + "/mcp", token: is.token(t, "erin", "Erin", testAudience)}
	if code := erin.initialize(); code != http.StatusOK {
		t.Fatalf("erin's initialize: %d", code)
	}
	if code, body := visit(needsSignIn("erin", call(erin, "erin"))); code != http.StatusOK || !strings.Contains(body, "Erin is signed in to docs") {
		t.Fatalf("erin's sign-in: %d %s", code, body)
	}
	if got := call(erin, "erin"); !strings.Contains(got, "hello erin") {
		t.Errorf("erin's call after signing in: %s", got)
	}
	// A session without a caller (stdio: one user) is served by the
	// shared connection, with the hub's own sign-in, as auth: shared.
	local, err := h.Open("local", "stdio", nopPeer{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	msg, _ := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"stdio"}}}`))
	if res, err := local.Request(t.Context(), msg); err != nil || !strings.Contains(string(res), "hello stdio") {
		t.Errorf("a stdio session's call: %s %v", res, err)
	}

	// A sign-in the server stops taking, and that cannot be renewed (its
	// refresh token is not the server's latest), asks alice again.
	aliceTokens := map[string]bool{}
	for _, c := range seen() {
		if c.who == "alice" {
			aliceTokens[c.token] = true
		}
	}
	for tok := range aliceTokens {
		a.RevokeToken(strings.TrimPrefix(tok, "Bearer "))
	}
	needsSignIn("alice, her token revoked", call(alice, "alice"))

	tokens := map[string]map[string]bool{}
	for _, c := range seen() {
		if tokens[c.who] == nil {
			tokens[c.who] = map[string]bool{}
		}
		tokens[c.who][c.token] = true
	}
	if len(tokens["alice"]) != 1 || len(tokens["bob"]) != 1 {
		t.Fatalf("each user's calls should carry one token of their own: %v", tokens)
	}
	if len(tokens["dave"]) != 1 || tokens["dave"][operator] || len(tokens["alice"]) == 1 && tokens["dave"][firstKey(tokens["alice"])] {
		t.Errorf("dave's calls should carry one token of his own: %v", tokens)
	}
	if !tokens["stdio"][operator] || len(tokens["stdio"]) != 1 {
		t.Errorf("the stdio session's call should carry the hub's own token %s: %v", operator, tokens["stdio"])
	}
	for tok := range tokens["erin"] {
		if tok == operator || tokens["alice"][tok] || tokens["bob"][tok] {
			t.Errorf("erin's call carried another's token: %v", tokens)
		}
	}
	if len(tokens["carol"]) != 0 {
		t.Errorf("carol's call reached the server without her signing in: %v", tokens["carol"])
	}
	for tok := range tokens["bob"] {
		if tokens["alice"][tok] || tok == operator {
			t.Errorf("bob's call carried %s, alice's or the hub's token (alice: %v, hub: %s)", tok, tokens["alice"], operator)
		}
	}
	for tok := range tokens["alice"] {
		if tok == operator {
			t.Errorf("alice's call carried the hub's own token %s", tok)
		}
	}
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
