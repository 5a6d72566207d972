package auth

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// ErrNoSignIn says a server answered without a token and publishes no
// OAuth metadata: it asks for no sign-in.
var ErrNoSignIn = errors.New("the server answered without a sign-in and publishes no OAuth metadata: it needs none (the hub connects to it as it is; a key it wants goes in the server's headers:)")

// LoginOptions configure a sign-in.
type LoginOptions struct {
	ClientID     string // pre-registered client; "" registers one (RFC 7591)
	ClientSecret string // with ClientID, for a confidential client
	// AuthMethod is how the confidential client authenticates, as it was
	// registered: client_secret_basic or client_secret_post; "" picks
	// basic unless the server lists only post.
	AuthMethod string
	// ClientMetadataURL is an https URL serving this client's metadata: the
	// client ID where the server supports client ID metadata documents.
	ClientMetadataURL string
	// ExpectedIssuer is the issuer the authorization server's metadata
	// may name instead of the one it is looked up for (Atlassian, Entra):
	// accepted with a warning each time; "" accepts none.
	ExpectedIssuer string
	// Previous is the sign-in on file, if any: its dynamic registration
	// is reused when made with the same authorization server (issuer),
	// for the same resource and redirect; with another, a new client is
	// registered (MCP 2026-07-28: registrations are kept by issuer).
	Previous *Record
	// Clients, where set, keeps the dynamic registration that every
	// user's sign-in to this server shares (a server's auth: per-user,
	// see clients.go): registered at the first and used by the others in
	// place of Previous's; nil registers for this sign-in alone.
	Clients      *Clients
	Logger       *slog.Logger      // default: none
	Scopes       []string          // "" asks for what the server says it needs
	RedirectPort int               // loopback port of the redirect; 0 picks one
	Headers      map[string]string // the server's configured headers, for the first request
	Open         func(url string) error
	Out          io.Writer     // where the URL and the countdown go
	Timeout      time.Duration // how long to wait for the browser; default 5 minutes
	HTTPClient   *http.Client  // default SafeClient
}

// Login signs in to the MCP server at serverURL and returns the record to
// store. It prints the authorization URL, opens it when it can, and waits
// for the redirect to the loopback address.
func Login(ctx context.Context, server, serverURL string, o LoginOptions) (*Record, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = SafeClient()
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckURL(serverURL); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.RedirectPort))
	if err != nil {
		return nil, fmt.Errorf("listen for the redirect: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)

	pl, err := planLogin(ctx, o, serverURL, redirect)
	if err != nil {
		return nil, err
	}
	conf := pl.oauthConfig(redirect)
	state := randomString()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", pl.resource))

	codes := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(state, pl.md.Issuer, codes), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	fmt.Fprintf(o.Out, "Sign in to %s in your browser:\n\n  %s\n\n", server, authURL)
	if o.Open != nil {
		if err := o.Open(authURL); err != nil {
			fmt.Fprintln(o.Out, "(could not open a browser: open the URL above yourself)")
		}
	}
	cb, err := waitForCallback(ctx, codes, o.Timeout, o.Out)
	if err != nil {
		return nil, err
	}
	return pl.exchange(ctx, o.HTTPClient, conf, cb.code, verifier, server, serverURL)
}

// client is the client a sign-in uses, and how it came to be.
type client struct {
	id, secret, method string
	registration       string // RegPreRegistered, RegMetadataDocument or RegDynamic
}

// chooseClient picks the client in the order of the specification
// (2025-11-25 and 2026-07-28, "Client Registration Approaches"): the
// pre-registered one of the config; a client ID metadata document where
// the server takes them; dynamic registration (RFC 7591), reusing the
// previous sign-in's when it was made with this issuer for this resource
// and redirect; else an error that says what to configure.
func chooseClient(ctx context.Context, o LoginOptions, md *serverMetadata, resource, redirect string) (client, error) {
	if o.ClientID != "" {
		c := client{id: o.ClientID, secret: o.ClientSecret, registration: RegPreRegistered}
		if o.ClientSecret != "" {
			// Pre-registered credentials: client_secret_basic, which every
			// server must support (RFC 6749 §2.3.1), unless it lists only post.
			c.method = cmp.Or(o.AuthMethod, "client_secret_basic")
			if supported := md.TokenEndpointAuthMethodsSupported; o.AuthMethod == "" && len(supported) > 0 && !slices.Contains(supported, c.method) && slices.Contains(supported, "client_secret_post") {
				c.method = "client_secret_post"
			}
		}
		return c, nil
	}
	if o.ClientMetadataURL != "" && md.CIMD {
		// Client ID metadata document: the URL is the client's ID, and a
		// public client authenticates with none.
		return client{id: o.ClientMetadataURL, method: "none", registration: RegMetadataDocument}, nil
	}
	if o.Clients != nil && md.RegistrationEndpoint != "" {
		known := func(c client) bool { return clientKnown(ctx, o.HTTPClient, md, c, redirect, resource) }
		return o.Clients.get(ctx, o.Logger, md.Issuer, redirect, known, func() (client, error) { return registerClient(ctx, o, md, redirect) })
	}
	if p := o.Previous; p != nil && p.Registration == RegDynamic && p.ClientID != "" {
		switch {
		case !sameIssuer(p.Issuer, md.Issuer):
			o.Logger.Info("the authorization server changed since the last sign-in: registering a new client",
				"was", p.Issuer, "now", md.Issuer)
		case p.Resource == resource && p.RedirectURI == redirect:
			return client{id: p.ClientID, secret: p.ClientSecret, method: p.AuthMethod, registration: RegDynamic}, nil
		}
	}
	if md.RegistrationEndpoint == "" {
		hint := ""
		if md.CIMD {
			hint = ", or oauth.client_metadata_url (an https URL serving this client's metadata document, which it supports)"
		}
		return client{}, fmt.Errorf("the authorization server %s offers no dynamic client registration: "+
			"set oauth.client_id (and oauth.client_secret for a confidential client) for this server%s", md.Issuer, hint)
	}
	return registerClient(ctx, o, md, redirect)
}

// registerClient registers a client at md's registration endpoint
// (RFC 7591) for redirect.
func registerClient(ctx context.Context, o LoginOptions, md *serverMetadata, redirect string) (client, error) {
	if err := CheckURL(md.RegistrationEndpoint); err != nil {
		return client{}, err
	}
	reg, err := register(ctx, o.HTTPClient, md.RegistrationEndpoint, redirect, o.Scopes)
	if err != nil {
		return client{}, fmt.Errorf("register a client at %s: %w (where the server registers none, set oauth.client_id for this server)", md.RegistrationEndpoint, err)
	}
	return client{id: reg.ClientID, secret: reg.ClientSecret, method: reg.authMethod(), registration: RegDynamic}, nil
}

func authStyle(method string) oauth2.AuthStyle {
	if method == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// challenge is what a server's 401 says about signing in (RFC 6750, RFC 9728).
type challenge struct {
	metadataURL string
	scope       string
	// answered says the server took the initialize without a token (a
	// 2xx answer in JSON or an event stream, as MCP answers; a sign-in
	// page a proxy redirects to is none): it may need no sign-in at all.
	answered bool
	// unreachable is why no answer came at all (a name that does not
	// resolve, a refused connection): nothing to sign in to.
	unreachable error
}

// mcpAnswer reports whether contentType is one an MCP server answers a
// POST with.
func mcpAnswer(contentType string) bool {
	t, _, _ := mime.ParseMediaType(contentType)
	return t == "application/json" || t == "text/event-stream"
}

// The challenge's parameters are read by pattern, not with oauthex's
// ParseWWWAuthenticate (go-sdk v1.8.0), which refuses a whole header with
// an empty quoted value (error_description="", valid in RFC 9110) or a
// missing comma, losing the resource_metadata beside it
// (TestOauthexStillDiffers).
// The patterns are compiled at first use, not at every start.
var (
	resourceMetadataParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`resource_metadata="([^"]+)"`) })
	scopeParam            = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`scope="([^"]+)"`) })
)

// probe asks the server to initialize without a token, to read its 401.
func probe(ctx context.Context, client *http.Client, serverURL string, headers map[string]string) challenge {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"dynamic-mcp","version":"auth"}}}`
	return send(ctx, client, serverURL, headers, body)
}

// send posts body and reads the challenge of a 401 or 403 answer.
func send(ctx context.Context, client *http.Client, serverURL string, headers map[string]string, body string) challenge {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return challenge{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return challenge{unreachable: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return challenge{answered: resp.StatusCode >= 200 && resp.StatusCode < 300 && mcpAnswer(resp.Header.Get("Content-Type"))}
	}
	var c challenge
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if m := resourceMetadataParam().FindStringSubmatch(h); m != nil {
			c.metadataURL = m[1]
		}
		if m := scopeParam().FindStringSubmatch(h); m != nil {
			c.scope = m[1]
		}
	}
	return c
}

// resourceMetadata is the part of RFC 9728 protected resource metadata
// the sign-in uses.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// fetchResourceMetadata reads the protected resource metadata the 401
// named, else the well-known ones (path-specific first, then the root); a
// zero value when there is none. The first document read must name the
// server's resource (checkResource), or the sign-in stops there: one
// that names another is the server's answer, not a miss to look past.
//
// Not oauthex.GetProtectedResourceMetadata at each URL (go-sdk's client
// handler tries the same URLs), which wants the metadata's resource to
// equal the URL asked for byte for byte, where we take one that differs
// by a trailing slash, the case of scheme and host or a default port, or
// names the server's origin or a path prefix of it (checkResource);
// refuses the whole document when one authorization server is not https,
// where discoverServer drops that one; and reads it as getJSON says.
func fetchResourceMetadata(ctx context.Context, client *http.Client, serverURL, named string) (resourceMetadata, error) {
	var candidates []string
	if named != "" && CheckURL(named) == nil {
		candidates = append(candidates, named)
	}
	if u, err := url.Parse(serverURL); err == nil {
		base := u.Scheme + "://" + u.Host
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			candidates = append(candidates, base+"/.well-known/oauth-protected-resource"+p)
		}
		candidates = append(candidates, base+"/.well-known/oauth-protected-resource")
	}
	for _, c := range candidates {
		var m resourceMetadata
		if !getJSON(ctx, client, c, &m) {
			continue
		}
		if m.Resource != "" {
			if err := checkResource(serverURL, c, m.Resource); err != nil {
				return resourceMetadata{}, err
			}
		}
		return m, nil
	}
	return resourceMetadata{}, nil
}

// getJSON reads the JSON document at u into v, reporting whether it could:
// a 200, whatever its Content-Type, whose JSON value ends within 1 MiB.
// oauthex's (unexported) wants Content-Type application/json, and decodes
// into the whole RFC 8414 (or RFC 9728) struct, so that one member of an
// unexpected type (grant_types_supported: "authorization_code") loses the
// document; v holds the members we use.
func getJSON(ctx context.Context, client *http.Client, u string, v any) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v) == nil
}

// callback is the authorization server's redirect.
type callback struct {
	code string
	err  error
}

// callbackHandler takes the redirect: the state must be the one sent, and
// an iss parameter, where present, the issuer's (RFC 9207).
func callbackHandler(state, issuer string, out chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		var cb callback
		switch {
		case q.Get("state") != state:
			cb.err = errors.New("the redirect's state does not match the one sent: the sign-in was not completed")
		case q.Get("iss") != "" && issuer != "" && q.Get("iss") != issuer:
			cb.err = fmt.Errorf("the redirect comes from issuer %q, not %q: the sign-in was not completed", q.Get("iss"), issuer)
		case q.Get("error") != "":
			cb.err = fmt.Errorf("the authorization server said %s: %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			cb.err = errors.New("the redirect carries no code")
		default:
			cb.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cb.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "dynamic-mcp: %v\n", cb.err)
		} else {
			io.WriteString(w, "dynamic-mcp: signed in. You can close this window.\n")
		}
		select {
		case out <- cb:
		default:
		}
	})
}

// waitForCallback waits for the redirect, counting down on out.
func waitForCallback(ctx context.Context, codes <-chan callback, timeout time.Duration, out io.Writer) (callback, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case cb := <-codes:
			fmt.Fprintln(out)
			return cb, cb.err
		case <-ctx.Done():
			return callback{}, ctx.Err()
		case now := <-tick.C:
			left := deadline.Sub(now).Round(time.Second)
			if left <= 0 {
				fmt.Fprintln(out)
				return callback{}, fmt.Errorf("no sign-in within %s", timeout)
			}
			fmt.Fprintf(out, "\rwaiting for the sign-in: %d:%02d left ", int(left.Minutes()), int(left.Seconds())%60)
		}
	}
}

// loginPlan is what a sign-in needs before the browser: the authorization
// server's metadata, the client to sign in as, the scopes to ask for and
// the resource (RFC 8707) the token is for.
type loginPlan struct {
	md       *serverMetadata
	c        client
	scopes   []string
	resource string
}

// planLogin finds, for the server at serverURL, where and as whom to sign
// in: the server's 401 and its protected resource metadata (RFC 9728: the
// URL the 401 names, else path-specific, else root well-known, naming the
// server's own resource) say which authorization server to use; its metadata is found there (RFC 8414,
// then OpenID, in the spec's order); the client is registered or given
// for redirect.
func planLogin(ctx context.Context, o LoginOptions, serverURL, redirect string) (loginPlan, error) {
	challenge := probe(ctx, o.HTTPClient, serverURL, o.Headers)
	if err := challenge.unreachable; err != nil {
		if ctx.Err() != nil {
			return loginPlan{}, context.Cause(ctx) // stopped, not unanswered
		}
		// Each guess of discovery and registration would fail alike, the
		// last with advice about oauth.client_id.
		return loginPlan{}, fmt.Errorf("the server does not answer: %w", err)
	}
	prm, err := fetchResourceMetadata(ctx, o.HTTPClient, serverURL, challenge.metadataURL)
	if err != nil {
		return loginPlan{}, err
	}
	md, err := discoverServer(ctx, o.HTTPClient, serverURL, prm, challenge.metadataURL != "", issuerCheck{expected: o.ExpectedIssuer, logger: o.Logger})
	if err != nil {
		return loginPlan{}, fmt.Errorf("discover the authorization server: %w", err)
	}
	if challenge.answered && md.lookedUp == "" && len(prm.AuthorizationServers) == 0 && o.ClientID == "" {
		// No 401, no resource metadata, no authorization server
		// metadata: the endpoints guessed (2025-03-26 defaults) would
		// only fail, at registration, with an error that points at
		// oauth.client_id. A configured client needs no registration:
		// its sign-in goes on at those endpoints.
		return loginPlan{}, ErrNoSignIn
	}
	for _, u := range []string{md.AuthorizationEndpoint, md.TokenEndpoint} {
		if err := CheckURL(u); err != nil {
			return loginPlan{}, fmt.Errorf("authorization server metadata: %w", err)
		}
	}
	resource := prm.Resource
	if resource == "" {
		resource = strings.TrimSuffix(serverURL, "/")
	}
	c, err := chooseClient(ctx, o, md, resource, redirect)
	if err != nil {
		return loginPlan{}, err
	}
	scopes := o.Scopes
	switch {
	case len(scopes) > 0:
	case challenge.scope != "":
		scopes = strings.Fields(challenge.scope)
	case len(prm.ScopesSupported) > 0:
		scopes = prm.ScopesSupported
	}
	if p := o.Previous; p != nil {
		// A call refused for want of a scope asked for more (Source.StepUp):
		// asking for the same again would only be refused again.
		scopes = unionScopes(scopes, p.Wanted...)
	}
	return loginPlan{md: md, c: c, scopes: scopes, resource: resource}, nil
}

// oauthConfig is the OAuth client of pl, redirected to redirect.
func (pl loginPlan) oauthConfig(redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: pl.c.id, ClientSecret: pl.c.secret, RedirectURL: redirect, Scopes: pl.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: pl.md.AuthorizationEndpoint, TokenURL: pl.md.TokenEndpoint, AuthStyle: authStyle(pl.c.method)},
	}
}

// exchange trades the redirect's code (with the PKCE verifier) for a
// token, through hc, and makes the record of server at serverURL to store.
func (pl loginPlan) exchange(ctx context.Context, hc *http.Client, conf *oauth2.Config, code, verifier, server, serverURL string) (*Record, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", pl.resource))
	if err != nil {
		return nil, fmt.Errorf("exchange the code for a token: %w", err)
	}
	rec := &Record{Server: server, URL: serverURL, Issuer: pl.md.Issuer, AuthServer: pl.md.lookedUp, TokenEndpoint: pl.md.TokenEndpoint, Resource: pl.resource,
		ClientID: conf.ClientID, ClientSecret: conf.ClientSecret, AuthMethod: pl.c.method, Scopes: pl.scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Issued: time.Now(),
		Registration: pl.c.registration, RedirectURI: conf.RedirectURL}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		rec.Scopes = strings.Fields(s)
	}
	return rec, nil
}
