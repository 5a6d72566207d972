package config

import (
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// HTTPAuth makes the HTTP face an OAuth 2.1 resource server (MCP spec,
// basic/authorization): callers sign in with an authorization server,
// Issuer, and send the JWT access tokens it issues for the hub, Audience.
// It coexists with http.token and http.tokens: a request is let in by a
// static token or by a valid JWT.
type HTTPAuth struct {
	// Issuer is the authorization server's issuer URL, exactly as its
	// tokens' iss claim and its OpenID Connect discovery document
	// (/.well-known/openid-configuration) say it. https, or http on a
	// loopback host. Required.
	Issuer string
	// Audience is the hub's resource identifier (RFC 8707), the URL
	// clients reach /mcp at, e.g. https://hub.example/mcp: a token's aud
	// must name it, and the protected resource metadata names it as the
	// resource. Required (the hub cannot know the URL it is reached by
	// behind a balancer).
	Audience string
	// Claims name the claims the caller's identity is read from.
	Claims AuthClaims
	// Profiles choose a profile by claim: the first whose claim has the
	// value wins. No match: DefaultProfile.
	Profiles []AuthProfile
	// DefaultProfile is the profile of a caller no entry of Profiles
	// matches; "" (the default) is the whole config.
	DefaultProfile string
	// Scopes, when set, must all be granted to a token (its scope claim,
	// space-separated, or scp, a list): a token without one is refused
	// 403 insufficient_scope. They are the metadata's scopes_supported.
	// Default none.
	Scopes []string
	// JWKSRefresh is how often the issuer's keys (and its metadata,
	// which names where they are) are fetched anew even when every token
	// names a key already known (so that a key the issuer withdrew, or
	// moved to a new jwks_uri, stops working at the old one); a token that names an unknown key
	// fetches them at once, at most once a JWKSMinRefetch. Default 10m.
	JWKSRefresh time.Duration
	// Introspection, when set, lets in opaque access tokens too (tokens
	// that are not JWTs), checked by the issuer's RFC 7662 introspection
	// endpoint (see AuthIntrospection). nil (the default): only JWTs.
	Introspection *AuthIntrospection
	// ClientID, when set, is the hub's own OpenID Connect client at
	// Issuer (authorization code with PKCE; redirect URI the hub's
	// /auth/confirm): a per-user sign-in link of a JWT caller then
	// first has its opener sign in there, and goes on to the upstream
	// only if the ID token's subject is the caller the link was made
	// for. Default none: the link is a bearer secret (see docs/identities.md).
	ClientID string
	// ClientSecret is ClientID's secret, for a confidential client;
	// default none (a public client, PKCE alone).
	ClientSecret string
	// Line is where http.auth is in the file.
	Line int
}

// AuthClaims are the names of the claims an identity is read from. A name
// may be a dotted path into an object claim, such as ext.groups (where
// ory/hydra puts the claims of a session unless they are top-level).
type AuthClaims struct {
	Subject string // default "sub"
	Name    string // default "name"
	Groups  string // default "groups"; a string or a list of strings
}

// AuthProfile is one entry of http.auth.profiles: a caller whose claim
// Claim is Value (or, for a list claim, holds Value) sees Profile.
type AuthProfile struct {
	Claim   string
	Value   string
	Profile string
	Line    int
}

// Defaults of http.auth.
const (
	DefaultJWKSRefresh = 10 * time.Minute
)

// Enabled reports whether http.auth is configured.
func (a *HTTPAuth) Enabled() bool { return a != nil && a.Issuer != "" }

// httpAuth reads http.auth.
func (p *parser) httpAuth(n *yaml.Node, key string) *HTTPAuth {
	a := &HTTPAuth{Claims: AuthClaims{Subject: "sub", Name: "name", Groups: "groups"}, JWKSRefresh: DefaultJWKSRefresh, Line: n.Line}
	claim := func(k string, v *yaml.Node, dst *string) {
		if s, ok := p.strOK(v, k); ok {
			if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
				p.fail(v, k, "must be a claim name, or a dotted path such as ext.groups, not %q", s)
				return
			}
			*dst = s
		}
	}
	p.mapping(n, key, map[string]func(string, *yaml.Node){
		"issuer":   func(k string, v *yaml.Node) { a.Issuer = p.authURL(v, k) },
		"audience": func(k string, v *yaml.Node) { a.Audience = p.authURL(v, k) },
		"claims": func(k string, v *yaml.Node) {
			p.mapping(v, k, map[string]func(string, *yaml.Node){
				"subject": func(k string, v *yaml.Node) { claim(k, v, &a.Claims.Subject) },
				"name":    func(k string, v *yaml.Node) { claim(k, v, &a.Claims.Name) },
				"groups":  func(k string, v *yaml.Node) { claim(k, v, &a.Claims.Groups) },
			})
		},
		"profiles": func(k string, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				p.fail(v, k, "must be a list of {claim, value, profile}")
				return
			}
			for i, e := range v.Content {
				ek := k + "[" + strconv.Itoa(i) + "]"
				ap := AuthProfile{Line: e.Line}
				p.mapping(e, ek, map[string]func(string, *yaml.Node){
					"claim":   func(k string, v *yaml.Node) { claim(k, v, &ap.Claim) },
					"value":   func(k string, v *yaml.Node) { ap.Value = p.str(v, k) },
					"profile": func(k string, v *yaml.Node) { ap.Profile = p.str(v, k) },
				})
				if ap.Claim == "" || ap.Profile == "" {
					p.fail(e, ek, "needs claim and profile (and value)")
					continue
				}
				a.Profiles = append(a.Profiles, ap)
			}
		},
		"default_profile": func(k string, v *yaml.Node) { a.DefaultProfile = p.str(v, k) },
		"scopes": func(k string, v *yaml.Node) {
			for _, s := range p.strings(v, k) {
				if s == "" || strings.ContainsAny(s, " \t\"\\") {
					p.fail(v, k, "a scope is a word without spaces, quotes or backslashes, not %q", s)
					continue
				}
				a.Scopes = append(a.Scopes, s)
			}
		},
		"jwks_refresh":  func(k string, v *yaml.Node) { a.JWKSRefresh = p.duration(v, k) },
		"introspection": func(k string, v *yaml.Node) { a.Introspection = p.introspection(v, k) },
		"client_id":     func(k string, v *yaml.Node) { a.ClientID = p.str(v, k) },
		"client_secret": func(k string, v *yaml.Node) { a.ClientSecret = p.str(v, k) },
	})
	if a.Issuer == "" && findKey(n, "issuer") == nil {
		p.fail(n, key+".issuer", "is required: the authorization server's issuer URL")
	}
	if a.ClientSecret != "" && a.ClientID == "" {
		p.fail(findKey(n, "client_secret"), key+".client_secret", "needs client_id")
	}
	if a.Audience == "" && findKey(n, "audience") == nil {
		p.fail(n, key+".audience", "is required: the URL clients reach the hub's /mcp at, e.g. https://hub.example/mcp")
	}
	return a
}

// authURL reads an absolute URL that must be https, or http on a
// loopback host (RFC 9728 and OAuth 2.1 ask for TLS; a test or a local
// issuer is on loopback).
func (p *parser) authURL(n *yaml.Node, key string) string {
	s, ok := p.strOK(n, key)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.RawQuery != "":
		p.fail(n, key, "must be an absolute https:// URL without query, fragment or user, not %q", s)
		return ""
	case u.Scheme == "https":
	case u.Scheme == "http" && LoopbackHost(u.Hostname()):
	default:
		p.fail(n, key, "must be https:// (http:// only on a loopback host), not %q", s)
		return ""
	}
	return s
}

// LoopbackHost reports whether host (a URL's Hostname) names this
// machine: localhost, or a loopback address.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkHTTPAuth reports profiles http.auth names that the config lacks.
func (p *parser) checkHTTPAuth(cfg *Config, n *yaml.Node) {
	a := cfg.HTTP.Auth
	if a == nil {
		return
	}
	for i, ap := range a.Profiles {
		if _, ok := cfg.Profiles[ap.Profile]; !ok {
			p.fail(&yaml.Node{Line: ap.Line}, "http.auth.profiles["+strconv.Itoa(i)+"].profile", "names profile %q, which profiles: does not have", ap.Profile)
		}
	}
	if a.DefaultProfile != "" {
		if _, ok := cfg.Profiles[a.DefaultProfile]; !ok {
			p.fail(findKey(n, "default_profile"), "http.auth.default_profile", "names profile %q, which profiles: does not have", a.DefaultProfile)
		}
	}
}

// LogValue keeps the client secret out of logs.
func (a HTTPAuth) LogValue() slog.Value {
	secret := ""
	if a.ClientSecret != "" {
		secret = "REDACTED"
	}
	return slog.GroupValue(slog.String("issuer", a.Issuer), slog.String("audience", a.Audience),
		slog.String("client_id", a.ClientID), slog.String("client_secret", secret))
}
