package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/upstreamtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// userUpstream is a Streamable HTTP server with auth: per-user in front of
// it: it tells its connections apart by the token each carries ("" for
// the hub's shared connection, which has no sign-in here), and a test
// writes on the GET stream of any of them what the server sends on its own.
type userUpstream struct {
	mu      sync.Mutex
	gets    upstreamtest.Streams     // each connection's GET stream, by its Authorization
	tokens  map[string]string        // the progress token of the last hold call, by Authorization
	subs    []string                 // the Authorization of each resources/subscribe
	answers map[string]string        // the hub's answers to the server's requests, by id
	holding map[string]chan struct{} // closed to end the hold calls of a connection
	held    map[string]int           // hold calls that began, by Authorization
}

func newUserUpstream() *userUpstream {
	return &userUpstream{tokens: map[string]string{}, answers: map[string]string{},
		holding: map[string]chan struct{}{}, held: map[string]int{}}
}

func (u *userUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who := r.Header.Get("Authorization")
	if r.Method == http.MethodGet {
		u.gets.Serve(w, r, who)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, method := jsonrpc.Field(body, "id"), string(jsonrpc.Field(body, "method"))
	res := `{}`
	switch {
	case id != nil && method == "": // the hub's answer to a request of ours
		u.mu.Lock()
		u.answers[string(id)] = string(body)
		u.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	case id == nil:
		w.WriteHeader(http.StatusAccepted)
		return
	case method == `"server/discover"`:
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.EncodeError(id, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")))
		return
	case method == `"initialize"`:
		w.Header().Set("Mcp-Session-Id", "s-"+strings.ReplaceAll(who, " ", "-"))
		res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{},"resources":{"subscribe":true}},"serverInfo":{"name":"docs","version":"1"}}`
	case method == `"tools/list"`:
		res = `{"tools":[{"name":"quick","inputSchema":{"type":"object"}},{"name":"hold","inputSchema":{"type":"object"}}]}`
	case method == `"resources/list"`:
		res = `{"resources":[{"uri":"file:///doc","name":"doc"}]}`
	case method == `"resources/templates/list"`:
		res = `{"resourceTemplates":[]}`
	case method == `"resources/subscribe"`:
		u.mu.Lock()
		u.subs = append(u.subs, who)
		u.mu.Unlock()
	case method == `"tools/call"` && strings.Contains(string(body), `"hold"`):
		var p struct {
			Meta struct {
				ProgressToken string `json:"progressToken"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(jsonrpc.Field(body, "params"), &p)
		u.mu.Lock()
		u.tokens[who] = p.Meta.ProgressToken
		u.held[who]++
		release := u.holding[who]
		if release == nil {
			release = make(chan struct{})
			u.holding[who] = release
		}
		u.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		res = `{"content":[{"type":"text","text":"held"}]}`
	case method == `"tools/call"`:
		res = `{"content":[{"type":"text","text":"quick"}]}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonrpc.EncodeResult(id, json.RawMessage(res)))
}

// push writes msg on the GET stream of the connection that carries who.
func (u *userUpstream) push(t *testing.T, who, msg string) {
	t.Helper()
	var out chan<- string
	await.For(t, 10*time.Second, "the GET stream of "+who, func() bool {
		out = u.gets.Of(who)
		return out != nil
	})
	out <- msg
}

// release ends the hold calls on who's connection.
func (u *userUpstream) release(who string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.holding[who]; c != nil {
		close(c)
		delete(u.holding, who)
	}
}

// leakPeer is a client that records what the hub sends it (a
// recordingPeer), and answers roots/list.
type leakPeer struct {
	recordingPeer
	calls []string // under recordingPeer.mu
}

func (p *leakPeer) Call(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, method+" "+string(params))
	return json.RawMessage(`{"roots":[]}`), nil
}

// asked is how many requests the hub sent the peer.
func (p *leakPeer) asked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// sessionOf is the session the observer's row of the upstream message
// whose params contain s is tagged with, and whether there is one.
func (r *recorder) sessionOf(s string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(string(m.Params), s) {
			return m.Session, true
		}
	}
	return "", false
}

// perUserHub is a hub in front of u as group docs, auth: per-user, with
// alice (token:alice) and bob (token:bob) signed in to it, and an
// observer of its traffic.
func perUserHub(t *testing.T, u *userUpstream) (*Hub, *recorder) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	ts := httptest.NewServer(u)
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	store := auth.NewStore(filepath.Join(dir, "oauth-servers"))
	for _, user := range []string{"alice", "bob"} {
		rec := &auth.Record{Server: "docs", URL: ts.URL + "/mcp", TokenEndpoint: ts.URL + "/token", ClientID: "hub", AccessToken: user + "-up", TokenType: "Bearer", User: "token:" + user}
		if err := store.ForUser("token:" + user).Save(rec); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := runHub(t, fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {call_timeout: 10s}\ngroups:\n  docs:\n    description: per user\n    url: %q\n    transport: streamable-http\n    auth: per-user\n",
		dir, ts.URL+"/mcp"), false)
	obs := &recorder{}
	h.Traffic().Observe(obs)
	t.Cleanup(func() { h.Traffic().Observe(nil) })
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["docs__quick"]; return ok })
	return h, obs
}

// userSession is a session of user over HTTP (as callerSession), with a
// client that records what it is sent, at log level debug, whose user's
// own connection to docs is made (by a call).
func userSession(t *testing.T, h *Hub, id, user string) (*Session, *leakPeer) {
	t.Helper()
	p := &leakPeer{}
	s, err := h.open(id, "streamable-http", "", &identity.Identity{Kind: identity.KindToken, Subject: user}, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, msg := range []string{initializeMsg, `{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`} {
		if _, err := s.Request(t.Context(), decodeMsg(t, msg)); err != nil {
			t.Fatal(err)
		}
	}
	s.Notification(decodeMsg(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if res, err := s.Request(t.Context(), decodeMsg(t, toolCall(1, "docs__quick", map[string]any{}))); err != nil || !strings.Contains(string(res), "quick") {
		t.Fatalf("%s's first call: %s %v", user, res, err)
	}
	return s, p
}

const (
	aliceConn = "Bearer alice-up"
	bobConn   = "Bearer bob-up"
)

// logOn sends a log message with text on who's connection, and waits for
// it to reach the session of want.
func logOn(t *testing.T, u *userUpstream, who, text string, want *leakPeer) {
	t.Helper()
	u.push(t, who, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`+text+`"}}`)
	await.For(t, 10*time.Second, "the log message "+text, func() bool { return want.count(text) > 0 })
}

// A log message on alice's own connection to a per-user server reaches
// alice's sessions, never bob's: with no call of hers in flight, and
// while bob's call to the server is.
func TestPerUserLogReachesItsUserAlone(t *testing.T) {
	u := newUserUpstream()
	h, obs := perUserHub(t, u)
	_, alice := userSession(t, h, "a", "alice")
	_, alice2 := userSession(t, h, "a2", "alice")
	bob1, bob := userSession(t, h, "b", "bob")

	logOn(t, u, aliceConn, "alice idle", alice)
	await.For(t, 10*time.Second, "alice's other session", func() bool { return alice2.count("alice idle") > 0 })
	if bob.count("alice idle") != 0 {
		t.Errorf("bob got the log of alice's own connection")
	}
	if sess, _ := obs.sessionOf("alice idle"); sess == "b" {
		t.Errorf("the inspector's row of alice's log is tagged with bob's session")
	}

	go bob1.Request(context.Background(), decodeMsg(t, toolCall(2, "docs__hold", map[string]any{})))
	await.For(t, 10*time.Second, "bob's hold call", func() bool { u.mu.Lock(); defer u.mu.Unlock(); return u.held[bobConn] > 0 })
	logOn(t, u, aliceConn, "alice during bob", alice)
	if bob.count("alice during bob") != 0 {
		t.Errorf("bob got the log of alice's own connection during his call")
	}
	u.release(bobConn)
	// Bob's own connection's log is his.
	logOn(t, u, bobConn, "bob's own", bob)
	if alice.count("bob's own") != 0 {
		t.Errorf("alice got the log of bob's own connection")
	}
}

// A roots/list that alice's own connection sends on its GET stream goes
// to alice's client, never to bob's: not while bob's call to the server
// is in flight, not when bob's is the only session open.
func TestPerUserRequestNeverToAnotherUser(t *testing.T) {
	u := newUserUpstream()
	h, _ := perUserHub(t, u)
	aliceSess, alice := userSession(t, h, "a", "alice")
	bob1, bob := userSession(t, h, "b", "bob")

	answer := func(id string) string {
		var got string
		await.For(t, 10*time.Second, "the answer to "+id, func() bool {
			u.mu.Lock()
			defer u.mu.Unlock()
			got = u.answers[id]
			return got != ""
		})
		return got
	}
	go bob1.Request(context.Background(), decodeMsg(t, toolCall(2, "docs__hold", map[string]any{})))
	await.For(t, 10*time.Second, "bob's hold call", func() bool { u.mu.Lock(); defer u.mu.Unlock(); return u.held[bobConn] > 0 })
	u.push(t, aliceConn, `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`)
	got := answer(`"r1"`)
	if bob.asked() != 0 {
		t.Errorf("bob was asked alice's connection's roots/list while his call was in flight (answer %s)", got)
	}
	if alice.asked() != 1 || !strings.Contains(got, `"roots"`) {
		t.Errorf("alice asked %d times, answer %s; want her client asked once", alice.asked(), got)
	}
	u.release(bobConn)

	aliceSess.Close()
	u.push(t, aliceConn, `{"jsonrpc":"2.0","id":"r2","method":"roots/list"}`)
	if got := answer(`"r2"`); bob.asked() != 0 || !strings.Contains(got, `"error"`) {
		t.Errorf("alice's connection's roots/list with bob's the only session: bob asked %d times, answer %s; want an error, bob never asked", bob.asked(), got)
	}
}

// Progress that alice's own connection sends with the token of bob's call
// (the hub's tokens are counted: guessed) never reaches bob's call.
func TestPerUserProgressNeverToAnotherUsersCall(t *testing.T) {
	u := newUserUpstream()
	h, _ := perUserHub(t, u)
	_, alice := userSession(t, h, "a", "alice")
	bob1, bob := userSession(t, h, "b", "bob")
	go bob1.Request(context.Background(), decodeMsg(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__hold","arguments":{},"_meta":{"progressToken":"bobs"}}}`))
	var tok string
	await.For(t, 10*time.Second, "bob's hold call", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		tok = u.tokens[bobConn]
		return u.held[bobConn] > 0
	})
	defer u.release(bobConn)
	if tok == "" {
		t.Fatal("bob's call went upstream with no progress token")
	}
	u.push(t, aliceConn, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"`+tok+`","progress":1,"message":"from alice"}}`)
	logOn(t, u, aliceConn, "after the progress", alice) // routed in order: the progress was before
	if bob.count("from alice") != 0 {
		t.Errorf("bob's call got progress from alice's own connection")
	}
	// Bob's own connection's progress is his call's.
	u.push(t, bobConn, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"`+tok+`","progress":1,"message":"from bob"}}`)
	await.For(t, 10*time.Second, "bob's progress", func() bool { return bob.count("from bob") > 0 })
}

// A resource subscription is made on the server's shared connection,
// never on a user's; an update on alice's own connection reaches no one
// else subscribed to the URI, one on the shared connection everyone
// subscribed.
func TestPerUserResourceUpdateNeverToAnotherUser(t *testing.T) {
	u := newUserUpstream()
	h, _ := perUserHub(t, u)
	aliceSess, alice := userSession(t, h, "a", "alice")
	bobSess, bob := userSession(t, h, "b", "bob")
	for _, s := range []*Session{aliceSess, bobSess} {
		if res, err := s.Request(t.Context(), decodeMsg(t, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///doc"}}`)); err != nil {
			t.Fatalf("subscribe: %s %v", res, err)
		}
	}
	u.mu.Lock()
	subs := append([]string(nil), u.subs...)
	u.mu.Unlock()
	if len(subs) != 1 || subs[0] != "" {
		t.Errorf("subscribes sent on the connections of %q, want one on the shared connection", subs)
	}
	u.push(t, aliceConn, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///doc","title":"alice's"}}`)
	logOn(t, u, aliceConn, "after the update", alice)
	if bob.count("alice's") != 0 {
		t.Errorf("bob was told of an update that came on alice's own connection")
	}
	u.push(t, "", `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///doc","title":"shared"}}`)
	await.For(t, 10*time.Second, "the shared connection's update", func() bool { return bob.count("shared") > 0 && alice.count("shared") > 0 })
}
