package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// asked is one question put to go-sdk's oauthex and to ours, against the
// server at url, through hc.
type asked struct {
	theirs, ours func(ctx context.Context, url string, hc *http.Client) error
}

// askMetadata asks both for the metadata of the authorization server at
// issuer (go-sdk's auth.GetAuthServerMetadata tries the URLs).
func askMetadata(issuer string, check issuerCheck) asked {
	check.logger = slog.New(slog.DiscardHandler)
	return asked{
		theirs: func(ctx context.Context, url string, hc *http.Client) error {
			md, err := sdkauth.GetAuthServerMetadata(ctx, url+issuer, hc)
			if err == nil && md == nil {
				err = errors.New("no metadata")
			}
			return err
		},
		ours: func(ctx context.Context, url string, hc *http.Client) error {
			md, err := discoverServer(ctx, hc, url+"/mcp", resourceMetadata{AuthorizationServers: []string{url + issuer}}, true, check)
			if err == nil && md.lookedUp != url+issuer {
				err = fmt.Errorf("the defaults of 2025-03-26, not the metadata: %+v", md)
			}
			return err
		},
	}
}

// askResource asks both for the protected resource metadata at /prm, for
// the resource /mcp, and ours for its authorization server too.
var askResource = asked{
	theirs: func(ctx context.Context, url string, hc *http.Client) error {
		_, err := oauthex.GetProtectedResourceMetadata(ctx, url+"/prm", url+"/mcp", hc)
		return err
	},
	ours: func(ctx context.Context, url string, hc *http.Client) error {
		prm, err := fetchResourceMetadata(ctx, hc, url+"/mcp", url+"/prm")
		if err != nil {
			return err
		}
		_, err = discoverServer(ctx, hc, url+"/mcp", prm, true, issuerCheck{})
		return err
	},
}

// askRegistration asks both to register a client at /register.
var askRegistration = asked{
	theirs: func(ctx context.Context, url string, hc *http.Client) error {
		_, err := oauthex.RegisterClient(ctx, url+"/register", &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://127.0.0.1:1/callback"}}, hc)
		return err
	},
	ours: func(ctx context.Context, url string, hc *http.Client) error {
		_, err := register(ctx, hc, url+"/register", "http://127.0.0.1:1/callback", nil)
		return err
	},
}

// askRefusedRegistration asks both to register at an endpoint that
// refuses with status and a body saying "internal detail": ours keeps the
// status apart from the body (a sign-in page shows the status alone),
// oauthex's error carries the body in its text.
func askRefusedRegistration(status int) asked {
	return asked{
		theirs: func(ctx context.Context, url string, hc *http.Client) error {
			if err := askRegistration.theirs(ctx, url, hc); err != nil && strings.Contains(err.Error(), "internal detail") {
				return err
			}
			return nil
		},
		ours: func(ctx context.Context, url string, hc *http.Client) error {
			var ae *AnswerError
			if err := askRegistration.ours(ctx, url, hc); !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Body, "internal detail") {
				return fmt.Errorf("not the status apart from the body: %#v", err)
			}
			return nil
		},
	}
}

// askChallenge asks both for the resource metadata URL of the 401 at /mcp
// (login.go reads the challenge by pattern).
var askChallenge = asked{
	theirs: func(ctx context.Context, url string, hc *http.Client) error {
		resp, err := hc.Post(url+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		_, err = oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		return err
	},
	ours: func(ctx context.Context, url string, hc *http.Client) error {
		if ch := probe(ctx, hc, url+"/mcp", nil); ch.metadataURL != url+"/prm" {
			return fmt.Errorf("challenge read as %+v", ch)
		}
		return nil
	},
}

// askPrivate asks both for the metadata of an https authorization server
// at a private address (a company's own), through a transport that
// refuses every request and counts them, so nothing leaves the machine:
// ours asks (SafeClient refuses only link-local and metadata addresses,
// after DNS), oauthex refuses before asking.
var askPrivate = asked{
	theirs: func(ctx context.Context, _ string, _ *http.Client) error {
		var n refusingTransport
		_, err := sdkauth.GetAuthServerMetadata(ctx, "https://10.1.2.3/as", &http.Client{Transport: &n})
		if n > 0 {
			return nil
		}
		return err
	},
	ours: func(ctx context.Context, _ string, _ *http.Client) error {
		var n refusingTransport
		findServerMetadata(ctx, &http.Client{Transport: &n}, "https://10.1.2.3/as")
		if n == 0 {
			return errors.New("asked nothing")
		}
		return CheckURL("https://10.1.2.3/as")
	},
}

// refusingTransport counts the requests it refuses.
type refusingTransport int

func (n *refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	*n++
	return nil, errors.New("refused by the test")
}

// The differences the comment on discoverServer lists, each put to go-sdk's
// oauthex (the version in go.mod) and to ours, with the same server and the
// same client (SafeClient): oauthex refuses, ours takes. When a go-sdk
// upgrade makes oauthex take one, its case fails: that difference is gone,
// and that part may move to oauthex. The first case, which both take, shows
// that the fixture and the client are not why oauthex refuses the others.
func TestOauthexStillDiffers(t *testing.T) {
	const pkce = `,"code_challenge_methods_supported":["S256"]`
	// metadata is authorization server metadata naming issuer, with more.
	metadata := func(issuer, more string) string {
		return fmt.Sprintf(`{"issuer":%q,"authorization_endpoint":"%[1]s/a","token_endpoint":"%[1]s/t","response_types_supported":["code"]%s}`, issuer, more)
	}
	// at serves body as JSON at path, 404 elsewhere.
	at := func(path string, body func(url string) string) func(http.ResponseWriter, *http.Request, string) {
		return func(w http.ResponseWriter, r *http.Request, url string) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body(url))
		}
	}
	asMetadata := at("/.well-known/oauth-authorization-server/as", func(url string) string { return metadata(url+"/as", pkce) })
	// resourceMetadata serves resource metadata at /prm, and the metadata
	// of the authorization server at /as.
	resourceMetadata := func(body string) func(http.ResponseWriter, *http.Request, string) {
		return func(w http.ResponseWriter, r *http.Request, url string) {
			if r.URL.Path == "/prm" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, body, url)
				return
			}
			asMetadata(w, r, url)
		}
	}
	cases := []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request, url string)
		asked
	}{{
		name:  "metadata that both take",
		serve: asMetadata,
		asked: askMetadata("/as", issuerCheck{}),
	}, {
		// Entra ID: OpenID with the path appended, no PKCE method listed
		// (it takes S256 all the same).
		name:  "metadata without code_challenge_methods_supported",
		serve: at("/tenant/v2.0/.well-known/openid-configuration", func(url string) string { return metadata(url+"/tenant/v2.0", "") }),
		asked: askMetadata("/tenant/v2.0", issuerCheck{}),
	}, {
		// Atlassian, Entra's common tenant: ours with oauth.expected_issuer.
		name:  "metadata naming another issuer",
		serve: at("/.well-known/oauth-authorization-server/as", func(string) string { return metadata("https://auth.example", pkce) }),
		asked: askMetadata("/as", issuerCheck{expected: "https://auth.example"}),
	}, {
		name: "a 500 at the first metadata URL",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			if r.URL.Path == "/.well-known/oauth-authorization-server/as" {
				http.Error(w, "busy", http.StatusInternalServerError)
				return
			}
			at("/.well-known/openid-configuration/as", func(url string) string { return metadata(url+"/as", pkce) })(w, r, url)
		},
		asked: askMetadata("/as", issuerCheck{}),
	}, {
		name: "metadata served as text/plain",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			if r.URL.Path != "/.well-known/oauth-authorization-server/as" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, metadata(url+"/as", pkce))
		},
		asked: askMetadata("/as", issuerCheck{}),
	}, {
		name: "metadata with a member of an unexpected type",
		serve: at("/.well-known/oauth-authorization-server/as", func(url string) string {
			return metadata(url+"/as", pkce+`,"grant_types_supported":"authorization_code"`)
		}),
		asked: askMetadata("/as", issuerCheck{}),
	}, {
		name:  "an https authorization server at a private address",
		serve: asMetadata,
		asked: askPrivate,
	}, {
		// An empty quoted value is valid (RFC 9110 §11.2).
		name: "a challenge with an empty quoted parameter",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="", resource_metadata="`+url+`/prm"`)
			w.WriteHeader(http.StatusUnauthorized)
		},
		asked: askChallenge,
	}, {
		// Ours takes the resource it names as the token's audience.
		name:  "resource metadata naming its resource with a trailing slash",
		serve: resourceMetadata(`{"resource":"%[1]s/mcp/","authorization_servers":["%[1]s/as"]}`),
		asked: askResource,
	}, {
		// Ours takes the server's origin as its resource (MCP 2025-11-25,
		// "Canonical Server URI"), as the root well-known URL names it.
		name:  "resource metadata naming the server's origin as its resource",
		serve: resourceMetadata(`{"resource":"%[1]s","authorization_servers":["%[1]s/as"]}`),
		asked: askResource,
	}, {
		// Ours drops that one, before asking it anything, and uses the next.
		name:  "resource metadata naming an authorization server by plain http",
		serve: resourceMetadata(`{"resource":"%[1]s/mcp","authorization_servers":["http://192.0.2.1/as","%[1]s/as"]}`),
		asked: askResource,
	}, {
		// Auth0's issuers end with a slash: RFC 8414 §3.1 removes it before
		// inserting the well-known path; oauthex asks
		// /.well-known/oauth-authorization-server/ (and
		// //.well-known/openid-configuration) instead.
		name: "an issuer with a trailing slash",
		serve: at("/.well-known/oauth-authorization-server", func(url string) string {
			return metadata(url+"/", pkce)
		}),
		asked: askMetadata("/", issuerCheck{}),
	}, {
		name: "resource metadata served as text/plain",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			if r.URL.Path == "/prm" {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprintf(w, `{"resource":"%[1]s/mcp","authorization_servers":["%[1]s/as"]}`, url)
				return
			}
			asMetadata(w, r, url)
		},
		asked: askResource,
	}, {
		name: "a registration refused with 500",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			http.Error(w, "internal detail", http.StatusInternalServerError)
		},
		asked: askRefusedRegistration(http.StatusInternalServerError),
	}, {
		// A proxy's page, not RFC 7591's error object: oauthex's error is
		// its failure to decode it, with the page in its text, and no
		// status.
		name: "a registration refused with 400 and a page",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, "<html><body>internal detail</body></html>")
		},
		asked: askRefusedRegistration(http.StatusBadRequest),
	}, {
		// Ours reads neither client_id_issued_at nor client_secret_expires_at.
		name: "a registration answered with a fractional client_id_issued_at",
		serve: func(w http.ResponseWriter, r *http.Request, url string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"client_id":"c1","client_id_issued_at":1767225600.5,"redirect_uris":["http://127.0.0.1:1/callback"]}`)
		},
		asked: askRegistration,
	}}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.serve(w, r, srv.URL) }))
			t.Cleanup(srv.Close)
			if err := c.ours(t.Context(), srv.URL, SafeClient()); err != nil {
				t.Errorf("ours refuses: %v", err)
			}
			switch err := c.theirs(t.Context(), srv.URL, SafeClient()); {
			case i == 0 && err != nil:
				t.Errorf("oauthex refuses what it should take (the fixture or the client is wrong): %v", err)
			case i > 0 && err == nil:
				t.Errorf("oauthex takes this now: the difference is gone, and this part may move to oauthex (see the comment on discoverServer)")
			case i > 0:
				t.Logf("oauthex: %v", err)
			}
		})
	}
}
