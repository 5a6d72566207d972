package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// WebFlow is a sign-in run through the hub's own HTTP face rather than a
// loopback listener (a server's auth: per-user): BeginWeb discovers the
// authorization server, registers or picks the client and makes the
// authorization URL with PKCE, for the redirect the face serves; Finish
// takes the redirect's query and exchanges the code. What it holds is
// small and lives as long as the face keeps it (minutes).
type WebFlow struct {
	server, serverURL string
	state, verifier   string
	conf              *oauth2.Config
	md                *serverMetadata
	resource          string
	c                 client
	scopes            []string
	o                 LoginOptions
	// AuthURL is where the user's browser is sent.
	AuthURL string
}

// State is the OAuth state the authorization URL carries: the redirect
// must bring it back.
func (f *WebFlow) State() string { return f.state }

// BeginWeb starts a sign-in to the server at serverURL whose redirect is
// redirect (an URL of the hub's HTTP face).
func BeginWeb(ctx context.Context, server, serverURL, redirect string, o LoginOptions) (*WebFlow, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = SafeClient()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckURL(serverURL); err != nil {
		return nil, err
	}
	pl, err := planLogin(ctx, o, serverURL, redirect)
	if err != nil {
		return nil, err
	}
	md, c, scopes, resource := pl.md, pl.c, pl.scopes, pl.resource
	f := &WebFlow{server: server, serverURL: serverURL, state: randomString(), verifier: oauth2.GenerateVerifier(), md: md,
		resource: resource, c: c, scopes: scopes, o: o}
	f.conf = &oauth2.Config{
		ClientID: c.id, ClientSecret: c.secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: authStyle(c.method)},
	}
	f.AuthURL = f.conf.AuthCodeURL(f.state, oauth2.S256ChallengeOption(f.verifier), oauth2.SetAuthURLParam("resource", resource))
	return f, nil
}

// Finish checks the redirect's query (the state, the issuer where named,
// RFC 9207, an error) and exchanges its code for the record to store.
func (f *WebFlow) Finish(ctx context.Context, q url.Values) (*Record, error) {
	switch {
	case q.Get("state") != f.state:
		return nil, errors.New("the redirect's state does not match the one sent: the sign-in was not completed")
	case q.Get("iss") != "" && f.md.Issuer != "" && q.Get("iss") != f.md.Issuer:
		return nil, fmt.Errorf("the redirect comes from issuer %q, not %q: the sign-in was not completed", q.Get("iss"), f.md.Issuer)
	case q.Get("error") != "":
		return nil, fmt.Errorf("the authorization server said %s: %s", q.Get("error"), q.Get("error_description"))
	case q.Get("code") == "":
		return nil, errors.New("the redirect carries no code")
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, f.o.HTTPClient)
	tok, err := f.conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.verifier), oauth2.SetAuthURLParam("resource", f.resource))
	if err != nil {
		return nil, fmt.Errorf("exchange the code for a token: %w", err)
	}
	rec := &Record{Server: f.server, URL: f.serverURL, Issuer: f.md.Issuer, AuthServer: f.md.lookedUp, TokenEndpoint: f.md.TokenEndpoint, Resource: f.resource,
		ClientID: f.conf.ClientID, ClientSecret: f.conf.ClientSecret, AuthMethod: f.c.method, Scopes: f.scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Issued: time.Now(),
		Registration: f.c.registration, RedirectURI: f.conf.RedirectURL}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		rec.Scopes = strings.Fields(s)
	}
	return rec, nil
}
