package mcphttp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A forged token's kid is the attacker's text: one that reads like the
// hub's own errors ("the issuer's keys cannot be fetched", "expected
// audience") is still a forged token, counted toward max_auth_failures:
// 401s, then 429, never 503.
func TestForgedKidsAreCounted(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	g := NewGuard(GuardOptions{Auth: &config.HTTPAuth{Issuer: is.srv.URL, Audience: testAudience, Claims: config.AuthClaims{Subject: "sub"}}, MaxAuthFailures: 3})
	h := g.Check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forge := func(kid string) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: ec, KeyID: kid}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"iss": is.srv.URL, "sub": "alice", "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix()})
		obj, _ := s.Sign(b)
		out, _ := obj.CompactSerialize()
		return out
	}
	kids := []string{"identity: the issuer's keys cannot be fetched", "expected audience"}
	var codes []int
	for i := range 30 {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.RemoteAddr = "192.0.2.7:1234"
		req.Header.Set("Authorization", "Bearer "+forge(kids[i%2]))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		codes = append(codes, w.Code)
	}
	for i, code := range codes {
		if want := http.StatusUnauthorized; i >= 3 {
			want = http.StatusTooManyRequests
			if code != want {
				t.Fatalf("forged tokens: %v, want 3 401s then 429", codes)
			}
		} else if code != want {
			t.Fatalf("forged tokens: %v, want 3 401s then 429", codes)
		}
	}
}

// A token whose subject differs from Alice's only by a control character
// (or by what lies past what is shown of a long one) is not Alice: it
// cannot use her session, and is refused as the issuer's own token.
func TestLookalikeSubjectsAreNotTheUser(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, _, _ := identityHub(t, is)
	long := strings.Repeat("a", 300)
	for _, c := range []struct{ victim, intruder string }{{"alice", "alice\x01"}, {long, long[:299] + "b"}} {
		victim := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, c.victim, "", testAudience)}
		if code := victim.initialize(); code != http.StatusOK {
			t.Fatalf("initialize %q: %d", c.victim, code)
		}
		intruder := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, c.intruder, "", testAudience), session: victim.session}
		if resp, got := intruder.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode == http.StatusOK {
			t.Errorf("sub %q used the session of %q: %d %s", c.intruder, c.victim, resp.StatusCode, got)
		}
	}
}
