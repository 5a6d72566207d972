package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

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
	pl                loginPlan
	o                 LoginOptions
	// retried says the flow is a sign-in's second try, after its client
	// was rejected (ErrClientRejected): there is no third.
	retried bool
	// AuthURL is where the user's browser is sent.
	AuthURL string
}

// ErrClientRejected says the authorization server rejected the client
// the sign-in used (invalid_client, RFC 6749 §5.2), as a server does
// that forgot a registration: a new sign-in checks the client it would
// use again, and registers another (see Clients).
var ErrClientRejected = errors.New("the authorization server does not know the hub's client")

// Retry marks f as the second try of a sign-in whose first was refused
// with ErrClientRejected.
func (f *WebFlow) Retry() { f.retried = true }

// Retried reports whether f is a second try (Retry).
func (f *WebFlow) Retried() bool { return f.retried }

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
	f := &WebFlow{server: server, serverURL: serverURL, state: randomString(), verifier: oauth2.GenerateVerifier(),
		conf: pl.oauthConfig(redirect), pl: pl, o: o}
	f.AuthURL = f.conf.AuthCodeURL(f.state, oauth2.S256ChallengeOption(f.verifier), oauth2.SetAuthURLParam("resource", pl.resource))
	return f, nil
}

// Finish checks the redirect's query (the state, the issuer where named,
// RFC 9207, an error) and exchanges its code for the record to store.
func (f *WebFlow) Finish(ctx context.Context, q url.Values) (*Record, error) {
	switch {
	case q.Get("state") != f.state:
		return nil, errors.New("the redirect's state does not match the one sent: the sign-in was not completed")
	case q.Get("iss") != "" && f.pl.md.Issuer != "" && q.Get("iss") != f.pl.md.Issuer:
		return nil, fmt.Errorf("the redirect comes from issuer %q, not %q: the sign-in was not completed", q.Get("iss"), f.pl.md.Issuer)
	case q.Get("error") != "":
		return nil, fmt.Errorf("the authorization server said %s: %s", q.Get("error"), q.Get("error_description"))
	case q.Get("code") == "":
		return nil, errors.New("the redirect carries no code")
	}
	rec, err := f.pl.exchange(ctx, f.o.HTTPClient, f.conf, q.Get("code"), f.verifier, f.server, f.serverURL)
	if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) && re.ErrorCode == "invalid_client" {
		return nil, fmt.Errorf("%w: %w", ErrClientRejected, err)
	}
	return rec, err
}
