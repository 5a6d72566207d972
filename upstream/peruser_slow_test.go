package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// alice is an owner whose requests are the user alice's.
type alice struct{ testOwner }

func (alice) UserKey() string { return "alice" }

// gatedPerUser is an HTTP server, g, with auth: per-user in a manager
// with settings (the inside of settings: {...}), alice signed in to it:
// it holds alice's initialize until the test closes gate; the shared
// connection (no token) is answered at once, and is up.
func gatedPerUser(t *testing.T, settings string) (s *Server, gate chan struct{}) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	gate = make(chan struct{})
	mcpSrv := mcpserver.NewMCPServer("slow", "1")
	mcpSrv.AddTool(mcp.NewTool("echo"), func(_ context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	inner := mcpserver.NewStreamableHTTPServer(mcpSrv)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") == "Bearer alice-token" && bytes.Contains(body, []byte(`"initialize"`)) {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  g:\n    description: remote\n    url: %q\n    auth: per-user\n",
		t.TempDir(), settings, srv.URL+"/mcp")
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.NewStore(cfg.TokenDir()).ForUser("alice").Save(&auth.Record{Server: "g", URL: srv.URL + "/mcp", AccessToken: "alice-token", TokenType: "Bearer"}); err != nil {
		t.Fatal(err)
	}
	_, s = startHTTP(t, cfg)
	await.For(t, 10*time.Second, "the shared connection", func() bool { return s.Status().State == StateReady })
	return s, gate
}

// A request the server sends on a user's own connection while it starts
// (its initialize held here), dialled for a call of one of the user's
// sessions, is that call's: the call is tracked on the connection from
// before it is dialled. With a call of another of the user's sessions
// waiting for the same connection it is ambiguous, for neither.
func TestPerUserRequestDuringStartIsTheCallers(t *testing.T) {
	s, gate := gatedPerUser(t, "connect_timeout: 1m")
	one, two := alice{"one"}, alice{"two"}
	answered := make(chan error, 2)
	call := func(o Owner) {
		go func() {
			_, err := s.Request(context.Background(), o, "tools/list", nil, time.Minute)
			answered <- err
		}()
	}
	var id ConnID
	tracked := func(n int) func() bool {
		return func() bool {
			s.mu.Lock()
			if iso := s.isolated[userConn("alice")]; iso != nil {
				id = iso.id
			}
			s.mu.Unlock()
			s.callMu.Lock()
			defer s.callMu.Unlock()
			return id != 0 && len(s.calls) == n
		}
	}
	call(one)
	await.For(t, 10*time.Second, "session one's call, waiting for alice's connection", tracked(1))
	if _, owner, _, ambiguous := s.callContext(withConn(context.Background(), id), trackedCall{}, nil); owner != Owner(one) || ambiguous {
		t.Errorf("a request on alice's connection as it starts for session one's call is %v's (ambiguous %v); want session one's", owner, ambiguous)
	}
	call(two)
	await.For(t, 10*time.Second, "session two's call too", tracked(2))
	if _, owner, _, ambiguous := s.callContext(withConn(context.Background(), id), trackedCall{}, nil); owner != nil || !ambiguous {
		t.Errorf("a request on alice's connection with calls of both her sessions waiting for it is %v's (ambiguous %v); want ambiguous", owner, ambiguous)
	}
	close(gate)
	for range 2 {
		if err := <-answered; err != nil {
			t.Error(err)
		}
	}
}

// A user's own connection (auth: per-user) to a server slower to answer
// initialize than its connect_timeout (250ms) comes up, as the shared
// connection does: each try that timed out gives the next twice as long,
// and the error says so. The server holds alice's initialize until the
// test opens its gate, after the tries it checks have timed out; the
// shared connection (no token) is answered at once.
func TestPerUserSlowServerGetsLongerConnects(t *testing.T) {
	s, gate := gatedPerUser(t, "connect_timeout: 250ms, retry: {initial_interval: 10ms}")

	// Each call's try times out (the gate is shut), and gives the next
	// twice as long.
	for _, want := range []string{"within 250ms (connect timeout); the next try waits 500ms", "within 500ms (connect timeout); the next try waits 1s"} {
		_, err := s.Request(t.Context(), alice{}, "tools/list", nil, time.Minute)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("alice's call: %v, want an error with %q", err, want)
		}
	}
	close(gate)
	// A loaded machine may cut a try off before its answer; the next is
	// longer still (1s, then 2s: the cap, 8x). The deadline bounds a hang.
	deadline := time.Now().Add(await.Slow * 10 * time.Second)
	for within := time.Second; ; within = min(2*within, 2*time.Second) {
		_, err := s.Request(t.Context(), alice{}, "tools/list", nil, time.Minute)
		if err == nil {
			break
		}
		to, ok := errors.AsType[*connectTimeout](err)
		if !ok || to.within != within {
			t.Fatalf("alice's call: %v, want a try within %s", err, within)
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's connection never came up: %v", err)
		}
	}
}

// Connections of several owners dialled together that time out together
// are one slow start: the next try waits twice as long (not 2^n times,
// at once at the cap), and the backoff takes one step, not n.
func TestIsolatedTimeoutsTogetherDoubleOnce(t *testing.T) {
	cfg := perSessionConfig(t, "connect_timeout: 250ms", 1)
	m := New(cfg, testLogger(t))
	s := m.Servers()[0]
	now := time.Now()
	m.now = func() time.Time { return now }
	var retry time.Time
	s.mu.Lock()
	for i := range 4 {
		to := &connectTimeout{cfg: s.Config, within: 250 * time.Millisecond}
		s.dialFailedLocked(to, false)
		if to.next != 500*time.Millisecond {
			t.Errorf("try %d timed out with the others: next waits %s, want 500ms", i+1, to.next)
		}
		if i == 0 {
			retry = s.isoRetry
		} else if !s.isoRetry.Equal(retry) {
			t.Errorf("try %d moved the backoff from %s to %s", i+1, retry.Sub(now), s.isoRetry.Sub(now))
		}
	}
	s.mu.Unlock()
	// Once the wait has passed, the next round's failure takes the next step.
	now = retry
	s.mu.Lock()
	to := &connectTimeout{cfg: s.Config, within: 500 * time.Millisecond}
	s.dialFailedLocked(to, false)
	s.mu.Unlock()
	if to.next != time.Second || !s.isoRetry.After(retry) {
		t.Errorf("the next round: next waits %s (want 1s), retry at %s after the last", to.next, s.isoRetry.Sub(retry))
	}
}
