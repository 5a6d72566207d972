package httpguard

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// An outsider cannot turn the token limiter on the hub's own clients
// (issue 20, finding 5): requests without a token (what an <img> on any
// web page sends) count nothing, every loopback address is one client
// with one budget, and a blocked address stays blocked however many
// other addresses fail meanwhile.
func TestHTTPTokenLimiterNotTurnedOnInsiders(t *testing.T) {
	hs := newTestFace(GuardOptions{Token: "secret", Loopback: true}, nil)
	defer hs.Close()
	now := time.Now()
	hs.guard.auth.now = func() time.Time { return now }
	try := func(addr, authorization string) int {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(initializeMsg))
		req.RemoteAddr = addr
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		return w.Result().StatusCode
	}
	for i := range 50 {
		if code := try("127.0.0.1:1000", ""); code != http.StatusUnauthorized {
			t.Fatalf("request %d without a token: %d", i, code)
		}
	}
	if code := try("127.0.0.1:2000", "Bearer secret"); code != http.StatusOK {
		t.Errorf("the real client after 50 requests without a token: %d, want 200", code)
	}

	// Wrong tokens from 127.0.0.2 count for 127.0.0.1 too: one host.
	for i := range maxAuthFailuresDefault(hs) {
		try(fmt.Sprintf("127.0.0.%d:1000", 2+i%200), fmt.Sprint("Bearer guess", i))
	}
	if code := try("127.0.0.1:3000", "Bearer secret"); code != http.StatusTooManyRequests {
		t.Errorf("loopback after its budget of wrong tokens from other 127/8 addresses: %d, want 429", code)
	}

	// Thousands of other addresses failing once do not unblock it.
	for i := range maxAuthAddrs + 100 {
		try(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), "Bearer nope")
	}
	if code := try("127.0.0.1:4000", "Bearer secret"); code != http.StatusTooManyRequests {
		t.Errorf("a blocked address after %d others failed: %d, want still 429", maxAuthAddrs+100, code)
	}
	if n := hs.guard.auth.size(); n > maxAuthAddrs {
		t.Errorf("%d addresses kept, over %d", n, maxAuthAddrs)
	}
	now = now.Add(authWindow)
	if code := try("127.0.0.1:5000", "Bearer secret"); code != http.StatusOK {
		t.Errorf("after the window: %d, want 200", code)
	}
}

func maxAuthFailuresDefault(hs *testFace) int { return hs.guard.auth.max }

// initializeMsg is what the requests in these tests carry: the guard
// never reads it.
const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

// testFace is what the HTTP face does before its handlers: the client's
// address from trusted balancers (WithClientAddr), then the guard's Check
// in front of a handler that answers 200.
type testFace struct {
	guard   *Guard
	trusted []netip.Prefix
	ok      http.Handler
}

func newTestFace(opts GuardOptions, trusted []netip.Prefix) *testFace {
	g := NewGuard(opts)
	return &testFace{guard: g, trusted: trusted, ok: g.Check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))}
}

func (f *testFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.ok.ServeHTTP(w, WithClientAddr(r, f.trusted))
}

func (f *testFace) Close() error { return nil }

// Token guessing is slowed: after 10 failures in a minute an address is
// answered 429 with Retry-After, even with the right token, until the
// minute is over; other addresses are not affected, and the table of
// addresses stays bounded.
func TestHTTPTokenGuessingSlowed(t *testing.T) {
	hs := newTestFace(GuardOptions{Token: "secret"}, nil)
	defer hs.Close()
	now := time.Now()
	hs.guard.auth.now = func() time.Time { return now }
	try := func(addr, token string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(initializeMsg))
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		return w.Result()
	}
	for i := range 10 {
		if resp := try("192.0.2.1:1000", fmt.Sprint("guess", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	for _, token := range []string{"guess10", "secret"} {
		resp := try("192.0.2.1:2000", token)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
			t.Errorf("%s after 10 failures: %d Retry-After %q", token, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if resp := try("198.51.100.7:1000", "secret"); resp.StatusCode != http.StatusOK {
		t.Errorf("another address: %d", resp.StatusCode)
	}
	now = now.Add(authWindow)
	if resp := try("192.0.2.1:1000", "secret"); resp.StatusCode != http.StatusOK {
		t.Errorf("a minute later: %d", resp.StatusCode)
	}
	// IPv6 addresses count by /64.
	for i := range 10 {
		try(fmt.Sprintf("[2001:db8::%x]:1000", i+1), "nope")
	}
	if resp := try("[2001:db8::ffff]:1000", "secret"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("another host of the same /64: %d", resp.StatusCode)
	}
	// Past the table's size, each new address makes room for itself: a
	// few hundred beyond it show the bound as well as thousands would.
	for i := range maxAuthAddrs + 256 {
		try(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), "nope")
	}
	if n := hs.guard.auth.size(); n > maxAuthAddrs {
		t.Errorf("%d addresses kept, over %d", n, maxAuthAddrs)
	}
}
