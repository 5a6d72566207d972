package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// metadata is what the hub reads of its authorization server's metadata
// (RFC 8414 section 2; an OpenID Connect discovery document is a superset).
type metadata struct {
	Issuer        string `json:"issuer"`
	JWKSURL       string `json:"jwks_uri"`
	Introspection string `json:"introspection_endpoint"`
}

// maxMetadata bounds a metadata document read.
const maxMetadata = 1 << 20

// metadataURLs are where issuer's metadata may be, in the order the MCP
// authorization spec (2025-11-25, "Authorization Server Metadata
// Discovery") tries them. For an issuer with a path
// (https://as.example/tenant1): RFC 8414's well-known URI inserted before
// the path (/.well-known/oauth-authorization-server/tenant1), OpenID
// Connect discovery's inserted likewise
// (/.well-known/openid-configuration/tenant1), and OpenID Connect
// discovery's appended to the path (/tenant1/.well-known/openid-configuration).
// Without a path: /.well-known/oauth-authorization-server, then
// /.well-known/openid-configuration. A terminating "/" of the path is
// removed first (RFC 8414 section 3.1), so https://as.example/ has no path.
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("http.auth.issuer %q is not an absolute URL", issuer)
	}
	base := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}, nil
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}, nil
}

// errNoMetadata: none of the well-known URLs has metadata (each answered,
// but not with a document of the issuer's).
var errNoMetadata = errors.New("no authorization server metadata of the issuer")

// fetchMetadata reads issuer's metadata from the first of metadataURLs
// that has it. A document is used only if its issuer is exactly the
// configured issuer (RFC 8414 section 3.3; OpenID Connect Discovery
// section 4.3): one naming another issuer is skipped, and if none is
// left the error says which URL named which issuer. A URL that cannot be
// reached at all ends the search: the others are on the same host.
//
// Not go-sdk's auth.GetAuthServerMetadata (oauthex.GetAuthServerMeta at
// each URL; v1.8.0), which tries these URLs in this order but refuses
// metadata without code_challenge_methods_supported (Entra ID's; the hub
// asks no code), gives up at the first answer that is not a 4xx (a 500),
// wants Content-Type application/json, refuses an issuer at a private
// address named by IP (the company's own) before asking, and takes an
// issuer that differs by a trailing slash, where the tokens' iss must be
// the configured issuer exactly; its errors do not say which URL named
// which issuer. TestMetadataOauthexStillDiffers fails once it takes one.
func fetchMetadata(ctx context.Context, client *http.Client, issuer string) (*metadata, string, error) {
	urls, err := metadataURLs(issuer)
	if err != nil {
		return nil, "", err
	}
	var tried []string
	for _, u := range urls {
		md, err := getMetadata(ctx, client, u)
		var unreachable *url.Error
		switch {
		case errors.As(err, &unreachable):
			return nil, "", err
		case err != nil:
			tried = append(tried, u+": "+err.Error())
		case md.Issuer != issuer:
			tried = append(tried, fmt.Sprintf("%s: its issuer is %q, not http.auth.issuer %q (RFC 8414 section 3.3: refused)", u, md.Issuer, issuer))
		default:
			return md, u, nil
		}
	}
	return nil, "", fmt.Errorf("%w: %s", errNoMetadata, strings.Join(tried, "; "))
}

// getMetadata reads one metadata document.
func getMetadata(ctx context.Context, client *http.Client, u string) (*metadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, body, err := send(client, req, maxMetadata)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	var md metadata
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return &md, nil
}
