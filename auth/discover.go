package auth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// serverMetadata is the part of an authorization server's metadata (RFC
// 8414) the sign-in uses.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	// CIMD says the server takes client ID metadata documents.
	CIMD bool `json:"client_id_metadata_document_supported"`
	// lookedUp is the authorization server's URL as the protected
	// resource metadata named it (or as guessed): its metadata was found
	// there; "" for the defaults of MCP 2025-03-26.
	lookedUp string
}

// discoverServer finds the authorization server of the MCP server at
// serverURL: the metadata of the first server its protected resource
// metadata names that publishes any; without such a name, that of the MCP
// server's own origin. Where none is published, the endpoints MCP
// 2025-03-26 defaults to on that origin (/authorize, /token, /register),
// as clients of that version do. named says the server's 401 named its
// resource metadata: then no origin is guessed.
//
// The metadata must name the issuer it was looked up for (RFC 8414 §3.3,
// OpenID Connect Discovery §4.3), or mix-up attacks go unnoticed; a
// provider known to name another (Atlassian, Entra) is let through only
// when the config says which: iss.expected, logged each time.
//
// Discovery and registration are ours, not go-sdk's oauthex (v1.8.0, the
// newest on the module proxy on 29 Nov 2026). oauthex uses our client as
// given (a transport that dials for itself, and CheckRedirect, are kept),
// but each of its functions differs from ours in a way that fails a
// sign-in that works today: the comment at each of ours says how.
// TestOauthexStillDiffers puts each difference to both, and fails once
// oauthex takes one. oauthex has no defaults of 2025-03-26 (the go-sdk
// client's handler has them, for the origin alone), and of client ID
// metadata documents only the metadata's flag.
func discoverServer(ctx context.Context, client *http.Client, serverURL string, prm resourceMetadata, named bool, iss issuerCheck) (*serverMetadata, error) {
	issuers := make([]string, 0, len(prm.AuthorizationServers))
	for _, issuer := range prm.AuthorizationServers {
		if CheckURL(issuer) == nil {
			issuers = append(issuers, issuer)
		}
	}
	if len(issuers) == 0 {
		if named && len(prm.AuthorizationServers) > 0 {
			return nil, errors.New("the protected resource metadata names no authorization server the hub may reach (https, or http on loopback)")
		}
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, err
		}
		issuers = []string{u.Scheme + "://" + u.Host}
	}
	var mismatch error
	for _, issuer := range issuers {
		md := findServerMetadata(ctx, client, issuer)
		if md == nil {
			continue
		}
		if err := iss.check(issuer, md.Issuer); err != nil {
			mismatch = cmp.Or(mismatch, err)
			continue
		}
		md.lookedUp = issuer
		return md, nil
	}
	if mismatch != nil {
		return nil, mismatch
	}
	u, err := url.Parse(issuers[0])
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	return &serverMetadata{Issuer: origin, AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register"}, nil
}

// issuerCheck holds a named issuer's metadata to naming that issuer.
type issuerCheck struct {
	// expected is the issuer the config accepts instead (oauth.expected_issuer).
	expected string
	logger   *slog.Logger
}

// check reports whether metadata looked up for issuer, naming named, may
// be used: the same URL (a trailing slash aside), or the one expected,
// with a warning. oauthex.GetAuthServerMeta compares alike, but has no
// oauth.expected_issuer for the providers known to name another
// (Atlassian, Entra), and its message does not name that fix.
func (c issuerCheck) check(issuer, named string) error {
	if sameIssuer(issuer, named) {
		return nil
	}
	if c.expected != "" && sameIssuer(c.expected, named) {
		c.logger.Warn("the authorization server's metadata names another issuer than the one it was looked up for; "+
			"accepted because oauth.expected_issuer says so (RFC 8414 §3.3 forbids this: mix-up attacks go unnoticed)",
			"looked_up", issuer, "issuer", named)
		return nil
	}
	return fmt.Errorf("the authorization server's metadata for %s names issuer %s (RFC 8414 §3.3 requires the same): "+
		"if this provider is known to do so, set oauth.expected_issuer: %s for this server", issuer, named, named)
}

func sameIssuer(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// MetadataURLs are where issuer's metadata may be, in the order the MCP
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
func MetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("issuer %q is not an absolute URL", issuer)
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

// findServerMetadata reads the metadata issuer publishes: RFC 8414 with
// the path inserted, OpenID Connect with the path inserted, OpenID Connect
// with the path appended; nil when none answers for that issuer.
//
// Not go-sdk's auth.GetAuthServerMetadata (oauthex.GetAuthServerMeta at
// each URL), which tries these URLs in this order but: gives up at the
// first answer that is not a 4xx (a 500, an HTML page), where we try the
// next; keeps an issuer's trailing slash (Auth0's), asking
// /.well-known/oauth-authorization-server/, where RFC 8414 §3.1 removes
// it; refuses metadata without code_challenge_methods_supported, which
// Entra ID leaves out and takes S256 all the same (RFC 8414 makes it
// optional; MCP 2025-11-25 says to refuse); and reads it as getJSON says.
func findServerMetadata(ctx context.Context, client *http.Client, issuer string) *serverMetadata {
	candidates, err := MetadataURLs(issuer)
	if err != nil {
		return nil
	}
	for _, c := range candidates {
		var md serverMetadata
		if getJSON(ctx, client, c, &md) && md.Issuer != "" {
			return &md
		}
	}
	return nil
}

// registration is an authorization server's answer to dynamic client
// registration (RFC 7591 section 3.2.1).
type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// TokenEndpointAuthMethod is the method the server registered, which
	// may differ from the one asked for.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// authMethod is the registered method, "" for one the hub does not know.
func (r *registration) authMethod() string {
	switch m := r.TokenEndpointAuthMethod; m {
	case "client_secret_basic", "client_secret_post", "none":
		return m
	}
	return ""
}

// register registers the hub as a public client with the loopback
// redirect (RFC 7591), asking for scopes when there are any.
//
// Not oauthex.RegisterClient (TestOauthexStillDiffers puts it to both): a
// refusal other than 400, or a 400 that is not RFC 7591's error object (a
// proxy's page), comes back from it as a plain error with the endpoint's
// body in its text, where AnswerError keeps the status apart, so that a
// sign-in page shows the status alone (the endpoint is named by the
// upstream's metadata and may be a service of the hub's own network); a
// 400 error object loses its status and body for "registration failed:
// code (description)"; it keeps 1 MiB of a refusal, where we keep 4 KiB;
// and its answer's client_id_issued_at and client_secret_expires_at must
// be whole numbers, which fails a registration that sends them otherwise
// (we read neither).
func register(ctx context.Context, client *http.Client, endpoint, redirect string, scopes []string) (*registration, error) {
	req := map[string]any{
		"client_name":                "dynamic-mcp",
		"redirect_uris":              []string{redirect},
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	}
	if len(scopes) > 0 {
		req["scope"] = strings.Join(scopes, " ")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	resp, err := client.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, &AnswerError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(msg))}
	}
	var reg registration
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&reg); err != nil {
		return nil, fmt.Errorf("the answer: %w", err)
	}
	if reg.ClientID == "" {
		return nil, errors.New("the answer has no client_id")
	}
	return &reg, nil
}

// AnswerError is an endpoint's refusal and what it answered (the first
// 4 KiB). A page shown to someone else than the operator shows the
// status alone: the endpoint was named by a server's metadata, and may
// be a service of the hub's own network.
type AnswerError struct {
	Status int
	Body   string
}

func (e *AnswerError) Error() string { return fmt.Sprintf("HTTP status %d: %s", e.Status, e.Body) }
