package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
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

// errNoMetadata: none of the well-known URLs has metadata (each answered,
// but not with a document of the issuer's).
var errNoMetadata = errors.New("no authorization server metadata of the issuer")

// fetchMetadata reads issuer's metadata from the first of auth.MetadataURLs
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
	urls, err := auth.MetadataURLs(issuer)
	if err != nil {
		return nil, "", fmt.Errorf("http.auth.%w", err)
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
