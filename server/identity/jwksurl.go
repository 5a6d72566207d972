package identity

import (
	"fmt"
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

// checkMetadataURL is checkJWKSURL for any URL of the metadata's, field
// (the introspection_endpoint, to which the hub sends callers' tokens).
func checkMetadataURL(field, s string) error {
	if s == "" {
		return fmt.Errorf("its discovery document names no %s", field)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("its discovery document's %s %q is not an absolute URL", field, s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && config.LoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("its discovery document's %s %q is not https:// (http:// only on a loopback host)", field, s)
}
