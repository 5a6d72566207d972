package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// lockoutGuard is a guard with the static token "letmein" and opaque
// tokens introspected at an endpoint that answers after delay, every
// token inactive (status 502 when down).
func lockoutGuard(t *testing.T, max int, delay time.Duration) (http.Handler, *atomic.Bool) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"active": false})
	}))
	t.Cleanup(srv.Close)
	g := httpguard.NewGuard(httpguard.GuardOptions{Token: "letmein", MaxAuthFailures: max, Auth: &config.HTTPAuth{Issuer: srv.URL, Audience: testAudience,
		Claims: config.AuthClaims{Subject: "sub"}, Introspection: &config.AuthIntrospection{URL: srv.URL + "/introspect", CacheTTL: time.Minute}}})
	return g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), &down
}

func tryToken(h http.Handler, ctx context.Context, token string) int {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", nil)
	req.RemoteAddr = "192.0.2.7:1234"
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

// Wrong tokens sent all at once, while the issuer is slow to answer for
// them, are counted as they come, not once each is answered: an address
// gets max_auth_failures tries a minute however many it sends at once
// (each wrong token is also a wrong guess of the static tokens).
func TestLockoutCountsTokensBeingChecked(t *testing.T) {
	t.Parallel()
	h, _ := lockoutGuard(t, 3, 300*time.Millisecond)
	var wg sync.WaitGroup
	var tried atomic.Int64
	for i := range 20 {
		wg.Go(func() {
			if code := tryToken(h, context.Background(), fmt.Sprint("guess-", i)); code != http.StatusTooManyRequests {
				tried.Add(1)
			}
		})
	}
	wg.Wait()
	if n := tried.Load(); n > 3 {
		t.Errorf("20 wrong tokens at once: %d checked, want at most max_auth_failures (3)", n)
	}
	if code := tryToken(h, context.Background(), "letmein"); code != http.StatusTooManyRequests {
		t.Errorf("after the burst: %d, want 429", code)
	}
}

// A caller that hangs up while its token is introspected is counted as
// any wrong token: hanging up is no way to try tokens uncounted.
func TestLockoutCountsCallersThatHangUp(t *testing.T) {
	t.Parallel()
	h, _ := lockoutGuard(t, 10, 20*time.Millisecond)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 10 {
		tryToken(h, gone, fmt.Sprint("guess-", i))
	}
	if code := tryToken(h, context.Background(), "letmein"); code != http.StatusTooManyRequests {
		t.Errorf("after 10 wrong tokens whose callers hung up: %d, want 429", code)
	}
}

// The auth scheme is case-insensitive (RFC 9110 section 11.1): a client
// that sends its good token as "bearer" is let in, not refused and
// counted as a wrong guess against its address.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	g := httpguard.NewGuard(httpguard.GuardOptions{Token: "letmein", MaxAuthFailures: 2})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.RemoteAddr = "192.0.2.8:1234"
		req.Header.Set("Authorization", scheme+" letmein")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Errorf("%q scheme with the right token: %d, want 200", scheme, w.Code)
		}
	}
}
