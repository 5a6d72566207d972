package mcphttp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	h := fakeHub(t)
	hs := New(h, Options{Token: "secret", Loopback: true}, testLogger())
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

func maxAuthFailuresDefault(hs *Server) int { return hs.guard.auth.max }
