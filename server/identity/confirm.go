package identity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Confirmer finds out who sits at a browser by an OpenID Connect sign-in
// (authorization code with PKCE and a nonce) at http.auth's issuer, as
// the hub's own client, http.auth.client_id: a per-user sign-in link
// goes on to the upstream only for the caller it was made for (the face's
// /auth/confirm). The identity is read from the ID token with the
// subject claim the access tokens' is read from (http.auth.claims), so
// that its Key is the caller's. It is safe for concurrent use and starts
// no goroutine.
type Confirmer struct {
	auth   config.HTTPAuth
	client *http.Client

	mu       sync.Mutex // guards provider and tried
	provider *oidc.Provider
	tried    time.Time // last failed discovery
}

// NewConfirmer is a Confirmer of auth (whose ClientID is set), asking the
// issuer through client (nil: http.DefaultClient), following a redirect
// only to https (http on a loopback host).
func NewConfirmer(auth config.HTTPAuth, client *http.Client) *Confirmer {
	if client == nil {
		client = http.DefaultClient
	}
	return &Confirmer{auth: auth, client: secureRedirects(client)}
}

// discoverProvider is the issuer's OpenID configuration, fetched once; a
// failure is answered for MinRefetch before it is tried again.
func (c *Confirmer) discoverProvider(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	if !c.tried.IsZero() && time.Since(c.tried) < MinRefetch {
		return nil, fmt.Errorf("%w: the issuer's discovery failed lately", ErrUnavailable)
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), c.client), fetchTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, c.auth.Issuer)
	if err == nil {
		err = checkProvider(p)
	}
	if err != nil {
		c.tried = time.Now()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c.provider = p
	return p, nil
}

func (c *Confirmer) config(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: c.auth.ClientID, ClientSecret: c.auth.ClientSecret, RedirectURL: redirect,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID}}
}

// AuthURL is where to send the browser to sign in, coming back to
// redirect with state; nonce goes into the ID token, verifier is the
// PKCE verifier Exchange is given.
func (c *Confirmer) AuthURL(ctx context.Context, redirect, state, nonce, verifier string) (string, error) {
	p, err := c.discoverProvider(ctx)
	if err != nil {
		return "", err
	}
	return c.config(p, redirect).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange trades the redirect's code for an ID token, checks it (the
// issuer's signature, iss, aud is the client, exp, nonce) and returns
// who signed in: an Identity of KindJWT with its subject and name.
func (c *Confirmer) Exchange(ctx context.Context, redirect, code, verifier, nonce string) (*Identity, error) {
	p, err := c.discoverProvider(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := c.config(p, redirect).Exchange(oidc.ClientContext(ctx, c.client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("exchange the code for an ID token: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, errors.New("the issuer sent no ID token")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: c.auth.ClientID}).Verify(oidc.ClientContext(ctx, c.client), raw)
	if err != nil {
		return nil, fmt.Errorf("the ID token is refused: %w", err)
	}
	if idt.Nonce != nonce {
		return nil, errors.New("the ID token's nonce is not the one sent")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("the ID token's claims: %w", err)
	}
	id, refused := person(claims, c.auth.Claims)
	if refused != "" {
		return nil, fmt.Errorf("the ID token %s (%s)", refused, c.auth.Claims.Subject)
	}
	return id, nil
}

// checkProvider refuses an issuer's OpenID configuration whose endpoints
// are not https (http only on a loopback host), as the Verifier refuses
// its jwks_uri: the hub's client secret and the ID token that says who
// a browser is never cross the network in the clear.
func checkProvider(p *oidc.Provider) error {
	var md struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err := p.Claims(&md); err != nil {
		return err
	}
	for _, u := range []struct{ field, url string }{{"jwks_uri", md.JWKSURL}, {"token_endpoint", p.Endpoint().TokenURL},
		{"authorization_endpoint", p.Endpoint().AuthURL}} {
		if err := checkMetadataURL(u.field, u.url); err != nil {
			return err
		}
	}
	return nil
}
