package config

import (
	"log/slog"
	"time"

	"gopkg.in/yaml.v3"
)

// AuthIntrospection is http.auth.introspection: opaque access tokens are
// checked by the authorization server's token introspection endpoint
// (RFC 7662), the hub authenticating as a client of its own.
type AuthIntrospection struct {
	// URL is the introspection endpoint. "" (the default): the
	// introspection_endpoint of the issuer's metadata. https, or http on
	// a loopback host.
	URL string
	// ClientID and ClientSecret authenticate the hub to the endpoint
	// (HTTP Basic, RFC 6749 section 2.3.1). Both "" (the default): no
	// client authentication (an endpoint reached on a private port, such
	// as ory/hydra's admin API).
	ClientID     string
	ClientSecret string
	// CacheTTL is how long at most an introspection's answer is kept (by
	// the token's SHA-256; never past the token's exp): a revoked token
	// stops working within it. Default 60s; at most 10m.
	CacheTTL time.Duration
	// Line is where http.auth.introspection is in the file.
	Line int
}

// Bounds of http.auth.introspection.
const (
	DefaultIntrospectionTTL = 60 * time.Second
	MaxIntrospectionTTL     = 10 * time.Minute
)

// LogValue prints the introspection settings without the secret.
func (i AuthIntrospection) LogValue() slog.Value {
	secret := ""
	if i.ClientSecret != "" {
		secret = "[redacted]"
	}
	return slog.GroupValue(slog.String("url", i.URL), slog.String("client_id", i.ClientID), slog.String("client_secret", secret),
		slog.Duration("cache_ttl", i.CacheTTL))
}

// introspection reads http.auth.introspection; `introspection: {}` turns
// it on with the discovered endpoint and no client authentication.
func (p *parser) introspection(n *yaml.Node, key string) *AuthIntrospection {
	in := &AuthIntrospection{CacheTTL: DefaultIntrospectionTTL, Line: n.Line}
	p.mapping(n, key, map[string]func(string, *yaml.Node){
		"url":           func(k string, v *yaml.Node) { in.URL = p.authURL(v, k) },
		"client_id":     func(k string, v *yaml.Node) { in.ClientID = p.str(v, k) },
		"client_secret": func(k string, v *yaml.Node) { in.ClientSecret = p.str(v, k) },
		"cache_ttl": func(k string, v *yaml.Node) {
			if in.CacheTTL = p.duration(v, k); in.CacheTTL > MaxIntrospectionTTL {
				p.fail(v, k, "must be at most %s: a revoked token works until it passes", MaxIntrospectionTTL)
			}
		},
	})
	if in.ClientSecret != "" && in.ClientID == "" {
		p.fail(n, key+".client_secret", "needs client_id")
	}
	return in
}
