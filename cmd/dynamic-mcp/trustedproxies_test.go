package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// serve --http with http.trusted_proxies listing the address a balancer
// reaches it from (here loopback, where the test sends from) counts
// failed tokens per client its X-Forwarded-For names: one client's wrong
// tokens lock that client out, not the next. Without the key every
// request is the balancer's, and both are locked out.
func TestServeTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprint("trusted=", trusted), func(t *testing.T) {
			cfg := fmt.Sprintf("mode: flat\nhttp:\n  max_auth_failures: 3\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin)
			if trusted {
				cfg = strings.Replace(cfg, "http:\n", "http:\n  trusted_proxies: [127.0.0.1/32, \"::1\"]\n", 1)
			}
			base, _ := startHTTPHub(t, cfg)
			try := func(client, token string) int {
				return initializeStatus(t, base, token, "203.0.113.9, "+client) // the first, the client's own claim
			}
			for range 3 {
				try("198.51.100.66", "wrong")
			}
			if code := try("198.51.100.66", testToken); code != http.StatusTooManyRequests {
				t.Errorf("the client with wrong tokens: %d, want 429", code)
			}
			want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[trusted]
			if code := try("198.51.100.77", testToken); code != want {
				t.Errorf("another client behind the balancer: %d, want %d", code, want)
			}
		})
	}
}
