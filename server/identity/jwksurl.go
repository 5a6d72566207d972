package identity

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// checkJWKSURL refuses a discovery document's jwks_uri that is not
// https (http only on a loopback host), as http.auth.issuer must be: the
// keys that decide who a caller is are not fetched in the clear. The
// host may differ from the issuer's (Google's keys are at
// www.googleapis.com, its issuer accounts.google.com): the document
// naming it came from the issuer over TLS.
func checkJWKSURL(s string) error { return checkMetadataURL("jwks_uri", s) }

// checkMetadataURL is checkJWKSURL for the metadata's URL field: the
// introspection_endpoint, to which the hub sends callers' tokens, and
// (Confirmer) the token and authorization endpoints.
func checkMetadataURL(field, s string) error {
	if s == "" {
		return fmt.Errorf("its discovery document names no %s", field)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("its discovery document's %s %q is not an absolute URL", field, s)
	case secure(u):
		return nil
	}
	return fmt.Errorf("its discovery document's %s %q is not https:// (http:// only on a loopback host)", field, s)
}

// secure reports whether u may be fetched for the issuer: https, or
// http on a loopback host.
func secure(u *url.URL) bool {
	return u.Scheme == "https" || u.Scheme == "http" && config.LoopbackHost(u.Hostname())
}

// maxRedirects is as many redirects as Go's default client follows.
const maxRedirects = 10

// secureRedirects is client, following a redirect only to a URL that is
// secure, as the issuer's and its metadata's URLs must be: the metadata
// and keys that decide who a caller is are never fetched in the clear,
// whatever the issuer (or a proxy before it) redirects to.
func secureRedirects(client *http.Client) *http.Client {
	c := *client
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !secure(req.URL) {
			return fmt.Errorf("redirected to %s: not https:// (http:// only on a loopback host)", req.URL.Redacted())
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &c
}
