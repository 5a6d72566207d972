package identity

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// An issuer's metadata or keys that redirect to http:// on a host not
// loopback are not fetched there: a redirect is held to what the
// metadata's own URLs must be (https://, http:// only on a loopback
// host), so the keys that decide who a caller is never cross the network
// in the clear, where anyone on the path could swap them. The issuer
// counts as down (503).
func TestRedirectsStayHTTPS(t *testing.T) {
	keys := newIssuer(t) // signs; its /jwks serves the keys
	for _, moved := range []string{"jwks", "metadata"} {
		t.Run(moved, func(t *testing.T) {
			var cleartext atomic.Int64
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Host == "id.example" {
					cleartext.Add(1) // fetched over http:// from a host not loopback
				}
				switch {
				case r.URL.Path == "/.well-known/oauth-authorization-server" && moved == "metadata" && r.Host != "id.example":
					http.Redirect(w, r, "http://id.example"+r.URL.Path, http.StatusFound)
				case r.URL.Path == "/.well-known/oauth-authorization-server":
					json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL + "/", "jwks_uri": srv.URL + "/jwks"})
				case r.URL.Path == "/jwks" && moved == "jwks" && r.Host != "id.example":
					http.Redirect(w, r, "http://id.example/jwks", http.StatusFound)
				case r.URL.Path == "/jwks":
					resp, err := http.Get(keys.srv.URL + "/jwks")
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadGateway)
						return
					}
					defer resp.Body.Close()
					io.Copy(w, resp.Body)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			// The hub's client reaches id.example (a name any network may
			// resolve) at the test server.
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
			}}}
			auth := config.HTTPAuth{Issuer: srv.URL + "/", Audience: audience, Claims: config.AuthClaims{Subject: "sub"}}
			v := NewVerifier(auth, nil, client, nil)
			_, err := v.Verify(context.Background(), keys.token(t, keys.claims(map[string]any{"iss": srv.URL + "/"})))
			if !errors.Is(err, ErrUnavailable) || cleartext.Load() != 0 {
				t.Errorf("%s redirected to http://id.example: %v, %d requests in the clear; want ErrUnavailable and none", moved, err, cleartext.Load())
			}
		})
	}
}
