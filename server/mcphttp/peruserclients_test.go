//lint:file-ignore SA1019 roots, sampling and logging are deprecated in 2026-07-28 (SEP-2577) but clients still use them, and the hub must keep each user's to that user.
package mcphttp

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/upstreamtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// ownConnUpstream is a Streamable HTTP server behind an authorization
// server (authtest): it tells its connections apart by the token each
// carries, learns whose each user's is from whoami's argument, and sends
// on a connection's GET stream what a test gives it, as a server does on
// its own (no call in flight).
type ownConnUpstream struct {
	mu      sync.Mutex
	streams upstreamtest.Streams // each connection's GET stream, by its Authorization
	conns   map[string]string    // each user's connection's Authorization, by whoami's argument
	answers map[string]string    // the hub's answers to this server's requests, by id
	asked   int                  // the requests its ask tool sent
	asking  int                  // its ask tool's calls in flight
	// joint counts the answers of asks made together (together over 1):
	// none of them returns before all have their answer, or the hub
	// would see the first call end and the second's request no longer
	// among two calls.
	joint   int
	answer1 chan struct{} // closed, and replaced, at each answer of the hub's, ask and GET stream (bump)
	// askAtStart: a connection whose GET stream opens is sent
	// roots/list on it (a server that asks its client's roots as the
	// client connects), and whoami answers on it once the hub has
	// answered that; started holds those answers, by connection.
	askAtStart bool
	started    map[string]string
}

// streamOpened is the upstream's Streams.Opened: it wakes whoever waits
// for the stream, and asks its roots as it opens where askAtStart says.
func (u *ownConnUpstream) streamOpened(r *http.Request, conn string) {
	u.mu.Lock()
	u.bump()
	askAtStart := u.askAtStart && u.started[conn] == ""
	u.mu.Unlock()
	if askAtStart {
		go func() { // ends with the request: askRoots gives up with its ctx
			got := u.askRoots(r.Context(), conn, "start", 1)
			u.mu.Lock()
			u.started[conn] = cmp.Or(got, "no answer")
			u.bump()
			u.mu.Unlock()
		}()
	}
}

// bump wakes whoever waits for an answer or an ask call; u.mu is held.
func (u *ownConnUpstream) bump() {
	close(u.answer1)
	u.answer1 = make(chan struct{})
}

func (u *ownConnUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn := r.Header.Get("Authorization")
	switch r.Method {
	case http.MethodGet:
		u.streams.Serve(w, r, conn) // opened: streamOpened
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, method := jsonrpc.Field(body, "id"), string(jsonrpc.Field(body, "method"))
	if id == nil || method == "" { // a notification, or the hub's answer to a request of this server's
		if id != nil {
			u.mu.Lock()
			u.answers[string(id)] = string(body)
			u.bump()
			u.mu.Unlock()
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	res := `{}`
	switch method {
	case `"server/discover"`:
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.EncodeError(id, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")))
		return
	case `"initialize"`:
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", len(conn)))
		res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{},"resources":{"subscribe":true}},"serverInfo":{"name":"docs","version":"1"}}`
	case `"tools/list"`:
		res = `{"tools":[{"name":"whoami","inputSchema":{"type":"object","properties":{"who":{"type":"string"}}}},{"name":"ask","inputSchema":{"type":"object","properties":{"together":{"type":"integer"}}}}]}`
	case `"resources/list"`:
		res = `{"resources":[{"uri":"file:///doc","name":"doc"}]}`
	case `"resources/templates/list"`:
		res = `{"resourceTemplates":[]}`
	case `"tools/call"`:
		if name := string(jsonrpc.Field(jsonrpc.Field(body, "params"), "name")); name == `"ask"` {
			together, _ := strconv.Atoi(string(jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(body, "params"), "arguments"), "together")))
			res = u.ask(r.Context(), conn, together)
			break
		}
		who := string(jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(body, "params"), "arguments"), "who"))
		u.awaitStart(r.Context(), conn)
		u.mu.Lock()
		u.conns[strings.Trim(who, `"`)] = conn
		u.mu.Unlock()
		res = `{"content":[{"type":"text","text":"hello ` + strings.Trim(who, `"`) + `"}]}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonrpc.EncodeResult(id, json.RawMessage(res)))
}

// ask is the ask tool's result: during the call it asks roots/list
// (askRoots) and answers with the hub's answer to it as its text.
func (u *ownConnUpstream) ask(ctx context.Context, conn string, together int) string {
	got := u.askRoots(ctx, conn, "ask", together)
	text, _ := json.Marshal(got)
	return `{"content":[{"type":"text","text":` + string(text) + `}]}`
}

// askRoots sends roots/list, id "PREFIX-N", on the GET stream of the
// connection conn once it is open (a server asking its client on its
// own, as a TypeScript SDK server's listRoots() does, unrelated to any
// request of the client's), and returns the hub's answer. With together
// over 1 it asks once that many are asking. "" when ctx ends first.
func (u *ownConnUpstream) askRoots(ctx context.Context, conn, prefix string, together int) string {
	u.mu.Lock()
	u.asked++
	u.asking++
	id := fmt.Sprintf(`"%s-%d"`, prefix, u.asked)
	u.bump()
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.asking--
		u.mu.Unlock()
	}()
	var out chan<- string
	if !u.await(ctx, func() bool { out = u.streams.Of(conn); return u.asking >= together && out != nil }) {
		return ""
	}
	out <- `{"jsonrpc":"2.0","id":` + id + `,"method":"roots/list"}`
	var got string
	u.await(ctx, func() bool { got = u.answers[id]; return got != "" })
	if together > 1 {
		u.mu.Lock()
		u.joint++
		u.bump()
		u.mu.Unlock()
		u.await(ctx, func() bool { return u.joint%together == 0 })
	}
	return got
}

// awaitStart waits, within ctx, until the hub has answered the roots/list
// sent as conn's GET stream opened, when askAtStart.
func (u *ownConnUpstream) awaitStart(ctx context.Context, conn string) {
	u.await(ctx, func() bool { return !u.askAtStart || u.started[conn] != "" })
}

// await waits until cond, called with u.mu held, holds (true), or ctx
// ends (false), woken by bump.
func (u *ownConnUpstream) await(ctx context.Context, cond func() bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for !cond() {
		next := u.answer1
		u.mu.Unlock()
		select {
		case <-next:
		case <-ctx.Done():
		}
		u.mu.Lock()
		if ctx.Err() != nil {
			return false
		}
	}
	return true
}

// send writes msg on the GET stream of user's own connection.
func (u *ownConnUpstream) send(t *testing.T, user, msg string) {
	t.Helper()
	var out chan<- string
	await.For(t, 10*time.Second, "the GET stream of "+user+"'s connection", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		out = u.streams.Of(u.conns[user])
		return u.conns[user] != "" && out != nil
	})
	out <- msg
}

// answer is the hub's answer to this server's request id.
func (u *ownConnUpstream) answer(t *testing.T, id string) string {
	t.Helper()
	var got string
	await.For(t, 10*time.Second, "the answer to "+id, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		got = u.answers[id]
		return got != ""
	})
	return got
}

// sdkUser is a user's go-sdk client: what it received (each message's
// method and params, as its receiving middleware sees them).
type sdkUser struct {
	cs  *sdk.ClientSession // nil for the TypeScript SDK's
	mu  sync.Mutex
	got []string
}

func (c *sdkUser) saw(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.got {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// connectUser connects go-sdk's client, speaking 2025-11-25 (a session,
// its GET stream), to the hub at url as the user of token, with log level
// debug; it signs the user in to docs (its first call asks, by URL
// elicitation) and subscribes to file:///doc. It answers roots/list with
// file:///who and sampling with "sampled for who".
func connectUser(t *testing.T, url, token, who string) *sdkUser {
	t.Helper()
	return connectUserAs(t, url, token, who, who)
}

// connectUserAs is connectUser with root file:///root, for one of a
// user's several sessions.
func connectUserAs(t *testing.T, url, token, who, root string) *sdkUser {
	t.Helper()
	u := openUser(t, url, token, who, root)
	ctx := t.Context()
	res, err := u.cs.CallTool(ctx, &sdk.CallToolParams{Name: "docs__whoami", Arguments: map[string]any{"who": who}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "hello "+who {
		t.Fatalf("%s's first call, signing in: %+v %v", who, res, err)
	}
	if err := u.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "file:///doc"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// openUser is connectUserAs up to the log level: no call yet.
func openUser(t *testing.T, url, token, who, root string) *sdkUser {
	t.Helper()
	u := &sdkUser{}
	c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-" + who, Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{}, Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if req.Params.Mode != "url" || !signInLink.MatchString(req.Params.URL) {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
			if code, body := newBrowser(who).open(t, req.Params.URL); code != http.StatusOK || !strings.Contains(body, who+" is signed in to docs") {
				return nil, fmt.Errorf("%s's sign-in: %d %s", who, code, body)
			}
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "sampled for " + who}}, nil
		},
	})
	c.AddRoots(&sdk.Root{URI: "file:///" + root})
	c.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			p, _ := json.Marshal(req.GetParams())
			u.mu.Lock()
			u.got = append(u.got, method+" "+string(p))
			u.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	ctx := t.Context()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	u.cs = cs
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// perUserClientsHub is a hub over HTTP (its /mcp at url) in front of up
// as group docs, auth: per-user, behind an authorization server, the
// hub signed in to it for the lists; alice, bob and carol sign in to
// the hub with their bearer tokens (userToken).
func perUserClientsHub(t *testing.T) (up *ownConnUpstream, url string) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	up = &ownConnUpstream{conns: map[string]string{}, answers: map[string]string{}, answer1: make(chan struct{}), started: map[string]string{}}
	up.streams.Opened = up.streamOpened
	a := authtest.NewServer(t)
	a.KeepTokens = true
	a.Resource = up
	dir := t.TempDir()
	if err := auth.NewStore(filepath.Join(dir, "oauth-servers")).Save(hubSignIn(t, a)); err != nil {
		t.Fatal(err)
	}
	yaml := flatFakeYAML(dir, "call_timeout: 10s", "    args: []\n") + fmt.Sprintf("  docs:\n    description: per user\n    url: %s/mcp\n    transport: streamable-http\n    auth: per-user\n", a.URL)
	h, mgr := runHub(t, yaml, nil)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, user := range []string{"alice", "bob", "carol"} {
		tokens[user] = userToken(user)
	}
	face := New(h, Options{Tokens: tokens, Auth: cfg.HTTP.Auth, SignIns: mgr}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	// A third user's session (alice's own would make hers two: a request
	// on her connection, with no call in flight, would be for neither).
	probe := &bearerClient{t: t, url: ts.URL + "/mcp", token: userToken("carol")}
	probe.initialize()
	await.For(t, 10*time.Second, "the per-user server's tools", func() bool {
		_, got := probe.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	return up, ts.URL + "/mcp"
}

func userToken(user string) string { return user + "-token-0123456789" }

// Two users, each signed in to the hub (a bearer token) and to a
// per-user server (through the hub's sign-in link), each with go-sdk's
// client: what the server sends on alice's own connection reaches her
// client and never bob's (see hearTheirOwn).
func TestPerUserSDKClientsHearTheirOwn(t *testing.T) {
	up, url := perUserClientsHub(t)
	alice := connectUser(t, url, userToken("alice"), "alice")
	bob := connectUser(t, url, userToken("bob"), "bob")
	hearTheirOwn(t, up, alice, bob)
}

// hearTheirOwn checks that what up sends on alice's own connection (a
// log message, a resource update, roots/list, sampling) reaches alice's
// client and never bob's, and bob's connection's log never alice's.
func hearTheirOwn(t *testing.T, up *ownConnUpstream, alice, bob *sdkUser) {
	const updated = "notifications/resources/updated" // go-sdk keeps only its uri
	up.send(t, "alice", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"log-on-alices"}}`)
	up.send(t, "alice", `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///doc"}}`)
	up.send(t, "alice", `{"jsonrpc":"2.0","id":"roots-on-alices","method":"roots/list"}`)
	up.send(t, "alice", `{"jsonrpc":"2.0","id":"sampling-on-alices","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}`)
	if got := up.answer(t, `"roots-on-alices"`); !strings.Contains(got, "file:///alice") {
		t.Errorf("roots/list on alice's connection was answered %s; want alice's roots", got)
	}
	if got := up.answer(t, `"sampling-on-alices"`); !strings.Contains(got, "sampled for alice") {
		t.Errorf("sampling on alice's connection was answered %s; want alice's client's", got)
	}
	await.For(t, 10*time.Second, "alice's log and update", func() bool { return alice.saw("log-on-alices") && alice.saw(updated) })
	// Bob's stream is in order: once his own connection's log reaches him,
	// anything of alice's the hub had sent him would have.
	up.send(t, "bob", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"log-on-bobs"}}`)
	await.For(t, 10*time.Second, "bob's log", func() bool { return bob.saw("log-on-bobs") })
	up.send(t, "alice", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"alices-last"}}`)
	await.For(t, 10*time.Second, "alice's last log", func() bool { return alice.saw("alices-last") })
	if bob.saw("on-alices") || bob.saw(updated) {
		bob.mu.Lock()
		t.Errorf("bob's client got what came on alice's own connection: %q", bob.got)
		bob.mu.Unlock()
	}
	if alice.saw("log-on-bobs") {
		t.Errorf("alice's client got the log of bob's own connection")
	}
}

// Likewise with alice on the official TypeScript SDK's client
// (testdata/sdkclient/peruser.mjs) and bob on go-sdk's.
func TestPerUserTSClientHearsItsOwn(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node:", err)
	}
	up, url := perUserClientsHub(t)
	alice := connectTSUser(t, url, userToken("alice"), "alice")
	bob := connectUser(t, url, userToken("bob"), "bob")
	hearTheirOwn(t, up, alice, bob)
}

// connectTSUser is connectUser with the TypeScript SDK's client: it runs
// peruser.mjs until the test ends, signs the user in at the link the
// script prints, and records what the script says its client received.
func connectTSUser(t *testing.T, url, token, who string) *sdkUser {
	t.Helper()
	u := &sdkUser{}
	cmd := exec.Command("node", filepath.Join("..", "..", "testdata", "sdkclient", "peruser.mjs"), "--url", url, "--token", token, "--who", who)
	cmd.Env = append(os.Environ(), "SDKCLIENT_TIMEOUT_MS=120000") // a loaded machine's slowness is not the client's failure
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	if err := cmp.Or(err, err2, cmd.Start()); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Check, URL, Method, Error string
		OK                        bool
		Params                    json.RawMessage
	}
	checks := make(chan line, 4)
	done := make(chan struct{})
	go func() { // ends when node exits and its stdout closes
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Check != "got" {
				checks <- l
				continue
			}
			u.mu.Lock()
			u.got = append(u.got, l.Method+" "+string(l.Params))
			u.mu.Unlock()
		}
		close(checks)
	}()
	t.Cleanup(func() {
		stdin.Close()
		<-done
		if err := cmd.Wait(); err != nil || t.Failed() {
			t.Logf("peruser.mjs (%v), its stderr:\n%s", err, stderr.String())
		}
	})
	next := func(want string) line {
		t.Helper()
		select {
		case l := <-checks:
			if l.Check != want || !l.OK {
				t.Fatalf("peruser.mjs said %+v; want %q, ok", l, want)
			}
			return l
		case <-time.After(3 * time.Minute): // bounds a hang, not a timing
			t.Fatalf("peruser.mjs did not say %q", want)
		}
		return line{}
	}
	link := next("sign in").URL
	if code, body := newBrowser(who).open(t, link); code != http.StatusOK || !strings.Contains(body, who+" is signed in to docs") {
		t.Fatalf("%s's sign-in: %d %s", who, code, body)
	}
	io.WriteString(stdin, "signed in\n")
	next("ready")
	return u
}

// One user with two sessions of go-sdk's client (two editor windows) on a
// per-user server, which the two share a connection to, and another
// user: a request the server sends during a session's call on its own
// (roots/list on the GET stream, related to no request of the hub's)
// goes to the session whose call it is, whichever of the two calls; one
// that cannot be told (no call in flight, both sessions calling at once)
// goes to none of them, with an error that says why, never to either
// session nor to the other user's.
func TestPerUserTwoSessionsOfOneUser(t *testing.T) {
	up, url := perUserClientsHub(t)
	one := connectUserAs(t, url, userToken("alice"), "alice", "alice-one")
	two := connectUserAs(t, url, userToken("alice"), "alice", "alice-two")
	bob := connectUser(t, url, userToken("bob"), "bob")
	ask := func(s *sdkUser, together int) string {
		t.Helper()
		res, err := s.cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "docs__ask", Arguments: map[string]any{"together": together}})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("ask: %+v %v", res, err)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	for _, c := range []struct {
		s    *sdkUser
		want string
	}{{one, "file:///alice-one"}, {two, "file:///alice-two"}, {one, "file:///alice-one"}} {
		if got := ask(c.s, 1); !strings.Contains(got, c.want) || strings.Contains(got, `"error"`) {
			t.Errorf("roots/list during a call of the session with root %s was answered %s", c.want, got)
		}
	}
	// Both of alice's sessions calling at once: the server's request says
	// not whose it is.
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, s := range []*sdkUser{one, two} {
		wg.Go(func() { got[i] = ask(s, 2) })
	}
	wg.Wait()
	for _, a := range got {
		if !strings.Contains(a, `"error"`) || !strings.Contains(a, "passed to none") || strings.Contains(a, "file:///") {
			t.Errorf("roots/list while both of alice's sessions call was answered %s; want an error that it went to neither", a)
		}
	}
	// No call in flight.
	up.send(t, "alice", `{"jsonrpc":"2.0","id":"roots-of-no-call","method":"roots/list"}`)
	if a := up.answer(t, `"roots-of-no-call"`); !strings.Contains(a, `"error"`) || !strings.Contains(a, "passed to none") || strings.Contains(a, "file:///") {
		t.Errorf("roots/list on alice's connection with no call in flight was answered %s; want an error that it went to neither of her sessions", a)
	}
	if bob.saw("roots/list") {
		t.Errorf("bob's client was asked alice's server's roots/list")
	}
}

// A server that asks its client's roots as a connection starts (on its
// GET stream, once it opens, and answers the call that the connection
// was made for once it has the roots): alice's connection, dialled for
// the first call of one of her two sessions, is asked by that session's
// call, whose client answers, not by no one's. (The connection is the
// call's from before it is dialled: a server quicker than the hub to
// ask finds the call tracked already.)
func TestPerUserStartAsksTheCallersSession(t *testing.T) {
	up, url := perUserClientsHub(t)
	up.mu.Lock()
	up.askAtStart = true
	up.mu.Unlock()
	two := openUser(t, url, userToken("alice"), "alice", "alice-two") // open, no call yet
	connectUserAs(t, url, userToken("alice"), "alice", "alice-one")   // dials alice's connection
	up.mu.Lock()
	got := up.started[up.conns["alice"]]
	up.mu.Unlock()
	if !strings.Contains(got, "file:///alice-one") || strings.Contains(got, `"error"`) {
		t.Errorf("roots/list as alice's connection started, for a call of her session one, was answered %q; want that session's roots", got)
	}
	if two.saw("roots/list") {
		t.Errorf("alice's other session was asked the roots of her session one's call")
	}
}
