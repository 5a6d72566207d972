package auth

import (
	"fmt"
	"net/url"
	"strings"
)

// checkResource reports whether protected resource metadata read at
// metadataURL, naming resource, is the metadata of the MCP server at
// serverURL, so that its authorization servers may be asked for a token
// for resource (RFC 9728 §3.3: the metadata's resource must be the
// resource identifier it was looked up for, else it MUST NOT be used).
// Without the check a server could name another server's resource and
// authorization server: the hub would get a token for that other server,
// and send it to the one that asked.
//
// The resource identifier of an MCP server is its canonical URI (MCP
// 2025-11-25, "Resource Parameter Implementation"; RFC 8707 §2), which
// may be the URL or an origin-wide identifier: the root well-known URL,
// where the path-specific one is not served, is the metadata of the
// origin, whose resource is the origin. So resource matches when it is
// serverURL, or a prefix of it by whole path segments on the same origin
// (as the TypeScript SDK's checkResourceAllowed, and the draft update of
// RFC 9728, draft-mcguinness-oauth-rfc9728bis); scheme and host compared
// without case, a default port the same as none, a trailing slash, the
// query and the fragment aside. Another origin, or another path on the
// same origin, is refused. The cost of the prefix: servers on one origin
// are trusted alike (one may name the origin, and get a token for it),
// as they share its TLS certificate anyway.
func checkResource(serverURL, metadataURL, resource string) error {
	if resourceCovers(resource, serverURL) {
		return nil
	}
	return fmt.Errorf("the protected resource metadata at %s names resource %s, not this server's URL %s "+
		"(nor a prefix of its path on the same origin): it may be another server's, so no token is asked for it (RFC 9728 §3.3); "+
		"if the server is yours, its metadata must name its own URL",
		metadataURL, resource, serverURL)
}

// resourceCovers reports whether resource identifies the server at
// serverURL (see checkResource).
func resourceCovers(resource, serverURL string) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" || r.Opaque != "" {
		return false
	}
	s, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Hostname(), s.Hostname()) || port(r) != port(s) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// port is u's port, the scheme's default where it names none.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
