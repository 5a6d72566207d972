package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// replicaOf runs a hub of yaml on the store at dbURL (a replica), as
// runHub does; db is the store, for the face.
func replicaOf(t *testing.T, yaml, dbURL string) (_ *server.Hub, _ *upstream.Manager, db shared.Store) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	db, err = pgstore.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	logger := testLogger()
	mgr := upstream.NewWith(cfg, logger, upstream.Options{Store: db})
	h, err := server.NewWith(cfg, mgr, logger, server.Options{Store: db})
	if err != nil {
		mgr.Close()
		db.Close()
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close(); db.Close() })
	return h, mgr, db
}

// twoReplicas are two replicas of a hub on one store, with a per-user
// server docs (the test authorization server, the hub signed in to it),
// callers of li's JWTs, http.auth.client_id set; and the hub's own
// sign-in, rec.
type twoReplicas struct {
	faces []*httptest.Server
	li    *loginIssuer
	seen  func() []seenCall
	rec   *auth.Record
	as    *authtest.Server
}

func newTwoReplicas(t *testing.T) *twoReplicas {
	dbURL := pgtest.Start(t)
	a, seen, rec := signedInUpstream(t)
	db, err := pgstore.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := auth.NewSharedStore(filepath.Join(t.TempDir(), "oauth-servers"), db).Save(rec); err != nil {
		t.Fatal(err)
	}

	li := newLoginIssuer(t, "hub-sign-in")
	key := make([]byte, 32)
	key[0] = 7
	var faces []*httptest.Server
	for range 2 {
		yaml := flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    args: []\n") + fmt.Sprintf(`  docs:
    description: a protected server, each user signed in for themselves
    url: %s/mcp
    transport: streamable-http
    auth: per-user
`, a.URL)
		yaml = strings.Replace(yaml, "groups:\n", fmt.Sprintf("http: { auth: { issuer: %s, audience: %s, client_id: hub-sign-in } }\ngroups:\n", li.srv.URL, testAudience), 1)
		h, mgr, db := replicaOf(t, yaml, dbURL)
		cfg, _ := config.Parse("test.yaml", strings.NewReader(yaml))
		face := New(h, Options{Tokens: map[string]string{"ci": ciToken}, Auth: cfg.HTTP.Auth, SessionKeys: [][]byte{key}, Store: db, SignIns: mgr}, testLogger())
		ts := httptest.NewServer(face)
		t.Cleanup(func() { ts.Close(); face.Close() })
		faces = append(faces, ts)
	}
	return &twoReplicas{faces: faces, li: li, seen: seen, rec: rec, as: a}
}

// With store:, a sign-in link made by one replica is opened, pressed and
// called back at the others behind a round-robin balancer (every step
// on another replica than the one before), and the user's next call, on
// any replica, runs with the token. With client_id, the identity
// provider's redirect comes back at another replica too, and a person
// who is not the link's user is refused there as on one replica.
func TestSignInAcrossReplicas(t *testing.T) {
	r := newTwoReplicas(t)
	faces, li, seen, rec := r.faces, r.li, r.seen, r.rec
	// The balancer: round robin, the Host kept (links are made of it).
	var next atomic.Int64
	var mu sync.Mutex
	served := map[string][]int{} // /auth/ path -> the replicas that served it, in order
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := int(next.Add(1)) % len(faces)
		u, _ := url.Parse(faces[i].URL)
		r.SetURL(u)
		r.Out.Host = r.In.Host
		if strings.HasPrefix(r.In.URL.Path, "/auth/") {
			mu.Lock()
			served[r.In.Method+" "+r.In.URL.Path] = append(served[r.In.Method+" "+r.In.URL.Path], i)
			mu.Unlock()
		}
	}})
	defer lb.Close()
	p := &perUser{t: t, li: li, url: lb.URL, calls: seen, clients: map[string]*bearerClient{}}

	// Mallory opens alice's link: refused, at whichever replica.
	aliceLink := p.link("alice")
	if !strings.HasPrefix(aliceLink, lb.URL) {
		t.Fatalf("the link %s is not the balancer's", aliceLink)
	}
	if code, got := newBrowser("mallory").open(t, aliceLink); code != http.StatusForbidden || !strings.Contains(got, "signs <b>Alice</b> in to docs") {
		t.Fatalf("mallory opened alice's link: %d %s; want 403", code, got)
	}
	// Alice and bob open links of their own: each step may be at another
	// replica; their calls then run with their tokens on every replica.
	for _, user := range []string{"alice", "bob"} {
		code, got := newBrowser(user).open(t, p.link(user))
		if code != http.StatusOK || !strings.Contains(got, people[user]+" is signed in to docs") {
			t.Fatalf("%s opened their own link: %d %s", user, code, got)
		}
		for range 2 {
			if got := p.call(user); !strings.Contains(got, "hello "+user) {
				t.Fatalf("%s's call after signing in: %s", user, got)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(li.signedIn()), "alice") {
		t.Errorf("the identity provider signed in %v", li.signedIn())
	}
	mu.Lock()
	t.Logf("replicas by step: %v", served)
	steps := [][]int{served["GET /auth/start"], served["POST /auth/start"], served["GET /auth/confirm"], served["GET /auth/callback/docs"]}
	mu.Unlock()
	other := false
	for i := range steps[0] {
		for s := 1; s < len(steps); s++ {
			if i < len(steps[s]) && steps[s][i] != steps[s-1][i] {
				other = true
			}
		}
	}
	if !other {
		t.Errorf("no step of a sign-in was at another replica than the step before: %v", steps)
	}
	for tok := range p.tokensOf("alice") {
		if tok == "Bearer "+rec.AccessToken || p.tokensOf("bob")[tok] {
			t.Errorf("alice's call ran with the hub's or bob's token")
		}
	}
	if len(p.tokensOf("mallory")) != 0 {
		t.Errorf("mallory's calls reached the server: %v", p.tokensOf("mallory"))
	}
}

// With store: and a balancer that keeps each MCP session on one replica
// (nginx's hash of Mcp-Session-Id) but sends browsers anywhere, a
// client that accepts the URL elicitation waits on its replica while the
// sign-in finishes at another: the call is told, and goes on with the
// user's token within its timeout.
func TestSignInWaitAcrossReplicas(t *testing.T) {
	r := newTwoReplicas(t)
	var next atomic.Int64
	var mu sync.Mutex
	sticky := map[string]int{} // session id -> replica
	callbacks := map[int]int{} // replica -> callbacks served
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		i := int(next.Add(1)) % len(r.faces)
		mu.Lock()
		if s, ok := sticky[pr.In.Header.Get(headerSessionID)]; ok {
			i = s
		}
		if strings.HasPrefix(pr.In.URL.Path, "/auth/callback/") {
			for _, home := range sticky { // the one session's: the callback at the other replica
				i = 1 - home
			}
			callbacks[i]++
		}
		mu.Unlock()
		u, _ := url.Parse(r.faces[i].URL)
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
		pr.Out.Header.Set("X-Test-Replica", fmt.Sprint(i))
	}, ModifyResponse: func(resp *http.Response) error {
		if id := resp.Header.Get(headerSessionID); id != "" {
			var i int
			fmt.Sscan(resp.Request.Header.Get("X-Test-Replica"), &i)
			mu.Lock()
			if _, ok := sticky[id]; !ok {
				sticky[id] = i
			}
			mu.Unlock()
		}
		return nil
	}})
	defer lb.Close()

	// A 2025-11-25 client with URL elicitation, in a session.
	bob := &bearerClient{t: t, url: lb.URL + "/mcp", token: r.li.token(t, "bob", "Bob", testAudience)}
	if resp, got := bob.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.StatusCode, got)
	}
	bob.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	await.For(t, 10*time.Second, "the per-user server's tools", func() bool {
		_, got := bob.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return strings.Contains(got, `"docs__whoami"`)
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, bob.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docs__whoami","arguments":{"who":"bob"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bob.token)
	req.Header.Set(headerSessionID, bob.session)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var asked []string
	var result string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for result == "" && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Mode string `json:"mode"`
				URL  string `json:"url"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(data), &m)
		switch {
		case m.Method == "elicitation/create":
			asked = append(asked, m.Params.Mode+" "+m.Params.URL)
			// Accepted at once; the person signs in meanwhile.
			bob.post(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept"}}`)
			go newBrowser("bob").open(t, strings.ReplaceAll(m.Params.URL, `\u0026`, "&"))
		case string(m.ID) == "2":
			result = data
		}
	}
	if !strings.Contains(result, `"text":"hello bob"`) || len(asked) != 1 || !strings.HasPrefix(asked[0], "url ") {
		t.Fatalf("bob's call, signing in by URL elicitation: %s (asked %q)", result, asked)
	}
	mu.Lock()
	defer mu.Unlock()
	var home int
	for _, i := range sticky {
		home = i
	}
	if len(sticky) != 1 || callbacks[1-home] != 1 {
		t.Errorf("the session's replica %d (%v); callbacks by replica %v: want the callback at the other", home, sticky, callbacks)
	}
}
