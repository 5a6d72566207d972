package httpguard

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

var testProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.0.2.7/32")}

// The client behind trusted proxies is the rightmost address of
// X-Forwarded-For that is not a trusted proxy: what the client wrote
// itself left of it is never believed, nor is any header from a peer
// that is not trusted. Forwarded (RFC 7239) is read when X-Forwarded-For
// is absent; what does not parse stops the walk at the trusted hop right
// of it.
func TestClientIP(t *testing.T) {
	for _, tc := range []struct {
		name, peer string
		header     map[string][]string
		want       string
	}{
		{"no proxies listed: the peer", "203.0.113.5:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.5"},
		{"untrusted peer: its header ignored", "203.0.113.5:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1, 10.0.0.1"}}, "203.0.113.5"},
		{"trusted peer without a header", "10.0.0.1:4000", nil, "10.0.0.1"},
		{"trusted peer, one hop", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "198.51.100.1"},
		{"spoofed chain: the client's own entries left of nginx's ignored", "10.0.0.1:4000",
			map[string][]string{"X-Forwarded-For": {"1.1.1.1, 10.0.0.9, 198.51.100.1"}}, "198.51.100.1"},
		{"two trusted proxies", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1, 192.0.2.7"}}, "198.51.100.1"},
		{"a client claiming a trusted address is stopped at its real one", "10.0.0.1:4000",
			map[string][]string{"X-Forwarded-For": {"10.0.0.5, 198.51.100.1"}}, "198.51.100.1"},
		{"several header lines, in order", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"1.1.1.1", "198.51.100.1, 10.2.3.4"}}, "198.51.100.1"},
		{"all trusted: the farthest", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"10.9.9.9, 10.0.0.2"}}, "10.9.9.9"},
		{"IPv6 peer and client", "[fd00::1]:4000", map[string][]string{"X-Forwarded-For": {"2001:db8::5"}}, "2001:db8::5"},
		{"IPv6 client with brackets and port", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"[2001:db8::5]:1234"}}, "2001:db8::5"},
		{"IPv4 client with a port", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1:555"}}, "198.51.100.1"},
		{"IPv4-mapped peer", "[::ffff:10.0.0.1]:4000", map[string][]string{"X-Forwarded-For": {"::ffff:198.51.100.1"}}, "198.51.100.1"},
		{"garbage rightmost: the peer", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1, <script>"}}, "10.0.0.1"},
		{"garbage behind a trusted hop: that hop", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"nonsense, 10.0.0.3"}}, "10.0.0.3"},
		{"empty entries", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {" , "}}, "10.0.0.1"},
		{"a zone is not an address", "10.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"fe80::1%eth0"}}, "10.0.0.1"},
		{"Forwarded", "10.0.0.1:4000", map[string][]string{"Forwarded": {`for=1.1.1.1, for="[2001:db8::7]:80";proto=https, for=10.0.0.2`}}, "2001:db8::7"},
		{"Forwarded with obfuscated or unknown hop", "10.0.0.1:4000", map[string][]string{"Forwarded": {"for=198.51.100.1, for=_hidden"}}, "10.0.0.1"},
		{"Forwarded element without for", "10.0.0.1:4000", map[string][]string{"Forwarded": {"for=198.51.100.1, proto=https"}}, "10.0.0.1"},
		{"X-Forwarded-For wins over Forwarded", "10.0.0.1:4000",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1"}, "Forwarded": {"for=1.1.1.1"}}, "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for k, vs := range tc.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			trusted := testProxies
			if strings.HasPrefix(tc.name, "no proxies") {
				trusted = nil
			}
			got, ok := clientIP(r, trusted)
			if !ok || got.String() != tc.want {
				t.Errorf("client %v (%v), want %s", got, ok, tc.want)
			}
		})
	}
	// A long chain of trusted hops is believed only so far.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.1"+strings.Repeat(", 10.0.0.2", 100))
	if got, _ := clientIP(r, testProxies); got.String() != "10.0.0.2" {
		t.Errorf("100 trusted hops: %v", got)
	}
}

// Behind a trusted balancer, one client sending wrong tokens is locked
// out and the others are not, though every request comes from the
// balancer's address; an untrusted peer's X-Forwarded-For changes
// nothing: each new claimed address is the same peer, locked out.
func TestTokenLockoutBehindTrustedProxy(t *testing.T) {
	var logs syncBuffer
	hs := newTestFace(GuardOptions{Token: "secret", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testProxies)
	defer hs.Close()
	try := func(peer, xff, authorization string) int {
		req := httptest.NewRequest(http.MethodPost, "http://hub.example/mcp", strings.NewReader(initializeMsg))
		req.RemoteAddr = peer
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		req.Header.Set("Authorization", authorization)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		return w.Result().StatusCode
	}
	for i := range maxAuthFailuresDefault(hs) {
		// The bad client claims other addresses; nginx appends its own.
		if code := try("10.0.0.1:5000", fmt.Sprintf("203.0.113.%d, 198.51.100.66", i), "Bearer guess"); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, code)
		}
	}
	if code := try("10.0.0.1:5001", "198.51.100.66", "Bearer secret"); code != http.StatusTooManyRequests {
		t.Errorf("the bad client after its budget: %d, want 429", code)
	}
	if code := try("10.0.0.1:5002", "198.51.100.77", "Bearer secret"); code != http.StatusOK {
		t.Errorf("another client behind the same balancer: %d, want 200", code)
	}
	if l := logs.String(); !strings.Contains(l, "addr=198.51.100.66") || strings.Contains(l, "10.0.0.1") || strings.Contains(l, "203.0.113.") {
		t.Errorf("the log of the lockout names another address than the client's:\n%s", l)
	}
	if code := try("[fd00::2]:5003", "2001:db8::9", "Bearer secret"); code != http.StatusOK {
		t.Errorf("another client behind an IPv6 balancer: %d, want 200", code)
	}

	// Not trusted: X-Forwarded-For is ignored, the peer is locked out.
	for i := range maxAuthFailuresDefault(hs) {
		try("203.0.113.200:1", fmt.Sprintf("198.51.100.%d", i), "Bearer guess")
	}
	if code := try("203.0.113.200:2", "198.51.100.250", "Bearer secret"); code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer claiming another client: %d, want 429", code)
	}
	// And it cannot lock out a client behind the balancer by naming it.
	if code := try("10.0.0.1:5004", "198.51.100.5", "Bearer secret"); code != http.StatusOK {
		t.Errorf("a client behind the balancer after an outsider named addresses: %d, want 200", code)
	}
	hs.guard.auth.now = func() time.Time { return time.Now().Add(authWindow) }
	if code := try("10.0.0.1:5005", "198.51.100.66", "Bearer secret"); code != http.StatusOK {
		t.Errorf("the bad client after the window: %d, want 200", code)
	}
}

// clientIP takes any header without panicking, and always answers an
// address without a zone.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"198.51.100.1", "1.1.1.1, 10.0.0.1", "[2001:db8::1]:80", `for="[::1]";by=x`, "fe80::1%eth0", ",,,", "\"\""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.1:1"
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		r.Header.Set("Forwarded", fwd)
		got, ok := clientIP(r, testProxies)
		if !ok || !got.IsValid() || got.Zone() != "" {
			t.Fatalf("%v %v", got, ok)
		}
		if r2 := WithClientAddr(r, testProxies); r2.RemoteAddr == "" {
			t.Error("no RemoteAddr")
		}
	})
}

// Over real connections, behind Go's httputil.ReverseProxy (which
// appends the address it got each request from to X-Forwarded-For, as
// nginx's $proxy_add_x_forwarded_for does) on a trusted address, in turn
// behind an outer balancer that said who each client is: the client
// whose tokens are wrong gets 429, the one next to it does not.
func TestTokenLockoutThroughReverseProxy(t *testing.T) {
	hs := newTestFace(GuardOptions{Token: "secret"}, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	defer hs.Close()
	hub := httptest.NewServer(hs)
	defer hub.Close()
	target, _ := url.Parse(hub.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	try := func(client, token string) int {
		req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/mcp", strings.NewReader(initializeMsg))
		req.Header.Set("X-Forwarded-For", client) // the outer balancer's word
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for range maxAuthFailuresDefault(hs) {
		try("198.51.100.66", "guess")
	}
	if code := try("198.51.100.66", "secret"); code != http.StatusTooManyRequests {
		t.Errorf("the client with wrong tokens: %d, want 429", code)
	}
	if code := try("198.51.100.77", "secret"); code != http.StatusOK {
		t.Errorf("another client through the same proxy: %d, want 200", code)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
