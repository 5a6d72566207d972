package identity

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The per-user sign-in's Confirmer asks the issuer as the Verifier does:
// its metadata is not fetched after a redirect to http:// off loopback,
// and a metadata naming a token endpoint or keys there (where the hub's
// client secret and the ID token that says who a browser is would cross
// the network in the clear) is the issuer's trouble (ErrUnavailable).
func TestConfirmerStaysHTTPS(t *testing.T) {
	for _, c := range []string{"redirect", "token_endpoint", "jwks_uri"} {
		t.Run(c, func(t *testing.T) {
			var cleartext atomic.Int64
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Host == "id.example" {
					cleartext.Add(1)
				}
				if c == "redirect" && r.Host != "id.example" {
					http.Redirect(w, r, "http://id.example"+r.URL.Path, http.StatusFound)
					return
				}
				md := map[string]any{"issuer": srv.URL + "/", "jwks_uri": srv.URL + "/jwks", "authorization_endpoint": srv.URL + "/auth",
					"token_endpoint": srv.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"}}
				if c != "redirect" {
					md[c] = "http://id.example/" + c
				}
				json.NewEncoder(w).Encode(md)
			}))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
			}}}
			conf := NewConfirmer(config.HTTPAuth{Issuer: srv.URL + "/", Audience: audience, ClientID: "hub", Claims: config.AuthClaims{Subject: "sub"}}, client)
			_, err := conf.AuthURL(t.Context(), "https://hub.example/auth/confirm", "s", "n", "the-verifier-0123456789012345678901234567890123")
			if !errors.Is(err, ErrUnavailable) || cleartext.Load() != 0 {
				t.Errorf("%s to http://id.example: %v, %d requests in the clear; want ErrUnavailable and none", c, err, cleartext.Load())
			}
		})
	}
}
