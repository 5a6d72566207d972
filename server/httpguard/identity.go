package httpguard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// This file is the HTTP face as an OAuth 2.1 resource server (MCP spec
// 2025-06-18 and later, basic/authorization): with http.auth, a caller
// may present a JWT access token of the configured issuer for the hub's
// audience besides a static token; the hub publishes its protected
// resource metadata (RFC 9728) and says where to find it in every 401's
// WWW-Authenticate, so that a client can discover the authorization
// server and sign its user in.

// IdentityOf is the caller of a request that passed a Guard's Check: the
// JWT's identity, the static token's name (Kind token), or the one
// caller of a guard that checks no token (Kind none); nil before Check.
func IdentityOf(ctx context.Context) *identity.Identity {
	if c := callerOf(ctx); c != nil {
		return c.who
	}
	return nil
}

// WellKnownResource is where protected resource metadata is (RFC 9728
// section 3).
const WellKnownResource = "/.well-known/oauth-protected-resource"

// ResourceMetadataURL is the URL of the protected resource metadata of
// resource (RFC 9728 section 3.1: the well-known path inserted between
// the host and the resource's path), e.g. https://hub.example/mcp ->
// https://hub.example/.well-known/oauth-protected-resource/mcp.
func ResourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + WellKnownResource + path
}

// authenticate checks a bearer token that is none of the static ones as
// a JWT of http.auth's issuer. ok false: w has been answered (503 when
// the issuer cannot be reached); else who is the caller, or nil with
// refused the reason the token is refused.
func (g *Guard) authenticate(w http.ResponseWriter, r *http.Request, token string) (who *identity.Identity, ok bool, refused error) {
	who, err := g.verifier.Verify(r.Context(), token)
	var scope *identity.ScopeError
	if errors.As(err, &scope) {
		// 403, not 401: the caller is known, its grant too small; the
		// scope says what to ask for when it signs in again.
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(scope.Need, " ")+
			`", resource_metadata="`+g.metadataURL+`", error_description="the token lacks a scope the hub requires"`)
		refuse(w, r, "Forbidden: insufficient scope", http.StatusForbidden)
		return nil, false, err
	}
	if errors.Is(err, identity.ErrUnavailable) {
		w.Header().Set("Retry-After", "10")
		refuse(w, r, "Service Unavailable: "+identity.ErrUnavailable.Error(), http.StatusServiceUnavailable)
		return nil, false, err
	}
	return who, true, err
}

// signed reports whether err refused a token its issuer signed (expired,
// for another audience): that is no guess, and does not count against
// the address (a team behind one NAT renews expired tokens all day).
func signed(err error) bool {
	var te *identity.TokenError
	return errors.As(err, &te) && te.Signed
}

// challenge is the WWW-Authenticate of a request refused 401 (RFC 6750
// section 3; MCP authorization: resource_metadata, RFC 9728 section
// 5.1). given says a token came; err is why it was refused.
func (g *Guard) challenge(given bool, err error) string {
	if g.verifier == nil {
		return `Bearer realm="dynamic-mcp"`
	}
	c := `Bearer resource_metadata="` + g.metadataURL + `"`
	if given {
		desc := "the token is none of the hub's"
		var te *identity.TokenError
		if errors.As(err, &te) {
			desc = te.Description
		}
		// A quoted-string: no quote or backslash (the descriptions are
		// the hub's own words, but a claim name may be quoted in one).
		desc = strings.NewReplacer(`"`, "'", `\`, "/").Replace(desc)
		c += `, error="invalid_token", error_description="` + desc + `"`
	}
	return c
}

// ResourceMetadata serves the hub's protected resource metadata (RFC
// 9728 section 3.2): the resource is http.auth.audience, its one
// authorization server http.auth.issuer. It is public, as a client reads
// it before it has a token, and any origin may read it (a browser-based
// client asks from its own).
func ResourceMetadata(auth *config.HTTPAuth) http.Handler {
	meta := map[string]any{
		"resource":                 auth.Audience,
		"authorization_servers":    []string{auth.Issuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "dynamic-mcp",
	}
	if len(auth.Scopes) > 0 {
		meta["scopes_supported"] = auth.Scopes
	}
	body, _ := json.Marshal(meta)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			refuse(w, r, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(body)
	})
}

// CheckOperator is Check for what is the operator's, not a caller's:
// /metrics, the reasons of /readyz. A caller signed in with a JWT (a
// member of the team, not its operator) is refused 403; the static tokens
// pass as with Check.
func (g *Guard) CheckOperator(next http.Handler) http.Handler {
	return g.Check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who := IdentityOf(r.Context()); who != nil && who.Kind == identity.KindJWT {
			refuse(w, r, "Forbidden: for the hub's static tokens only, not a signed-in caller's", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	}))
}
