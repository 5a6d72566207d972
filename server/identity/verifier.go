package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// signingAlgs are the algorithms a token may be signed with: asymmetric
// ones only, so that a token signed with a public key as an HMAC secret,
// or not at all, is refused.
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

const (
	// fetchTimeout bounds one request to the issuer (discovery, keys).
	fetchTimeout = 10 * time.Second
	// MinRefetch is how often at most the issuer is asked again for its
	// discovery document after a failure.
	MinRefetch = 10 * time.Second
	// MinKeyRefetch is how often at most its keys are fetched again for
	// tokens that name a key not among them: a rotation is picked up
	// within it, and forged tokens cost the issuer one request a
	// MinKeyRefetch at most.
	MinKeyRefetch = time.Second
	// nbfLeeway is the clock skew allowed a token's nbf (go-oidc would allow
	// five minutes; that much early use is too much for an access token).
	nbfLeeway = 30 * time.Second
)

// ErrUnavailable is the error of a token that cannot be checked now: the
// issuer's discovery document or keys cannot be fetched. It is the
// hub's trouble, not the caller's (503, not 401).
var ErrUnavailable = errors.New("the authorization server cannot be reached to check the token")

// TokenError is a token refused: Description says why, fit for
// WWW-Authenticate's error_description (RFC 6750 section 3). Signed says
// the issuer signed it (it is expired, or for another audience, ...):
// not a guess, as a forged or malformed token may be.
type TokenError struct {
	Description string
	Signed      bool
}

func (e *TokenError) Error() string { return "invalid token: " + e.Description }

// ScopeError is a token its issuer signed for the hub that lacks a scope
// http.auth.scopes asks for (RFC 6750 section 3.1, insufficient_scope).
type ScopeError struct{ Need []string }

func (e *ScopeError) Error() string {
	return "insufficient scope: the token needs " + strings.Join(e.Need, " ")
}

// Verifier checks JWT access tokens of http.auth's issuer (RFC 9068
// shaped, as the MCP authorization spec has them): the signature by the
// issuer's keys (found by its metadata, RFC 8414 or OpenID Connect
// discovery, and fetched again on rotation), iss, exp, nbf, and an aud
// that names the hub (RFC 8707: a token for another resource is
// refused); with http.auth.introspection, opaque tokens too, by the
// issuer's introspection endpoint (RFC 7662). It is safe for concurrent
// use and starts no goroutine.
type Verifier struct {
	auth   config.HTTPAuth
	logger *slog.Logger
	client *http.Client
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error // the keys' wait (keySet.sleep); tests make it move their clock

	found atomic.Pointer[discovered] // the metadata read last; read without a lock
	in    *introspector              // with http.auth.introspection, else nil

	discoverMu sync.Mutex // held by the one discovery under way; guards tried and triedErr
	tried      time.Time  // last failed discovery
	triedErr   error
}

// NewVerifier checks tokens as auth says, logging to logger (nil:
// nowhere) what it learns of the issuer. client makes the requests to the
// issuer (nil: http.DefaultClient), following a redirect only to https
// (http on a loopback host); now is the clock (nil: time.Now).
// Nothing is fetched until the first token comes: a hub whose issuer is
// down starts, and its static tokens work.
func NewVerifier(auth config.HTTPAuth, logger *slog.Logger, client *http.Client, now func() time.Time) *Verifier {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if client == nil {
		client = http.DefaultClient
	}
	client = secureRedirects(client)
	if now == nil {
		now = time.Now
	}
	if auth.JWKSRefresh <= 0 {
		auth.JWKSRefresh = config.DefaultJWKSRefresh
	}
	v := &Verifier{auth: auth, logger: logger, client: client, now: now, sleep: sleep}
	if auth.Introspection != nil {
		v.in = newIntrospector(v, *auth.Introspection)
	}
	return v
}

// Verify checks raw and returns its caller's identity: a *TokenError for
// a token refused, ErrUnavailable when the issuer cannot be reached.
// A JWT is checked by the issuer's keys; any other token, with
// http.auth.introspection, by introspection (introspect.go), as is a JWT
// of an issuer whose metadata names no keys. What it asks of the issuer
// is asked apart from ctx (see discover): a caller that goes away does
// not make the issuer seem down.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Identity, error) {
	if v.in != nil && !looksJWT(raw) {
		return v.in.verify(ctx, raw)
	}
	if strings.Count(raw, ".") != 2 {
		return nil, &TokenError{Description: "not a JWT"}
	}
	if head, _, _ := strings.Cut(raw, "."); len(head) > maxJWTHeader {
		// Its header is parsed before the signature is checked, by a
		// decoder without a nesting limit: refused before it is read.
		return nil, &TokenError{Description: "the token is malformed"}
	}
	found, err := v.discover(ctx)
	if err != nil {
		return nil, err
	}
	if found.keys == nil {
		if v.in != nil {
			return v.in.verify(ctx, raw)
		}
		return nil, fmt.Errorf("%w: its metadata names no jwks_uri", ErrUnavailable)
	}
	payload, err := found.keys.VerifySignature(ctx, raw)
	if err != nil {
		return nil, signatureError(err)
	}
	// The issuer signed it: from here every refusal is Signed.
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims == nil {
		return nil, &TokenError{Description: "the claims are not a JSON object", Signed: true}
	}
	if err := v.checkClaims(claims); err != nil {
		return nil, err
	}
	if !v.grantsScopes(claims) {
		return nil, &ScopeError{Need: v.auth.Scopes} // all of them: what to ask for when signing in again
	}
	return v.identity(claims)
}

// maxJWTHeader bounds a JWT's header (base64url, as sent): an access
// token's is a hundred bytes or so (alg, kid, typ), a few thousand with
// a certificate chain (x5c).
const maxJWTHeader = 4096

// looksJWT reports whether raw is shaped as a JWS compact serialization
// (RFC 7515 section 7.1): three parts, the first a JSON object with alg.
// An opaque token, even one with two dots, is not.
func looksJWT(raw string) bool {
	head, _, ok := strings.Cut(raw, ".")
	if !ok || strings.Count(raw, ".") != 2 || len(head) > maxJWTHeader {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(b, &h) == nil && h.Alg != nil
}

// checkClaims checks the registered claims of a token the issuer signed
// (RFC 9068 section 4): iss is http.auth.issuer, aud names the hub, exp
// is to come and nbf has passed. The hub checks them itself, so that
// what a refusal is never depends on an error's text.
func (v *Verifier) checkClaims(claims map[string]any) error {
	if iss, _ := claims["iss"].(string); iss != v.auth.Issuer {
		return &TokenError{Description: "the token is of another issuer", Signed: true}
	}
	if !holds(claims["aud"], v.auth.Audience) {
		return &TokenError{Description: "the token is not for this resource (aud)", Signed: true}
	}
	now := v.now()
	if exp, ok := claims["exp"].(float64); !ok || !now.Before(time.Unix(int64(exp), 0)) {
		return &TokenError{Description: "the token has expired", Signed: true}
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(nbfLeeway).Before(time.Unix(int64(nbf), 0)) {
		return &TokenError{Description: "the token is not valid yet", Signed: true}
	}
	return nil
}

// grantsScopes reports whether claims grant every scope of
// http.auth.scopes: in scope, space-separated (RFC 9068, RFC 8693), or
// scp, a list (ory/hydra, Entra ID).
func (v *Verifier) grantsScopes(claims map[string]any) bool {
	if len(v.auth.Scopes) == 0 {
		return true
	}
	granted := map[string]bool{}
	if s, ok := claims["scope"].(string); ok {
		for _, w := range strings.Fields(s) {
			granted[w] = true
		}
	}
	if list, ok := claims["scp"].([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				granted[s] = true
			}
		}
	}
	for _, s := range v.auth.Scopes {
		if !granted[s] {
			return false
		}
	}
	return true
}

// identity reads the caller's identity from claims, bounded.
func (v *Verifier) identity(claims map[string]any) (*Identity, error) {
	id, refused := person(claims, v.auth.Claims)
	if refused != "" {
		return nil, &TokenError{Description: "the token " + refused + " (" + v.auth.Claims.Subject + ")", Signed: true}
	}
	if sub, _ := claims["sub"].(string); sub != "" && claims["client_id"] == sub {
		// A token no user signed in for: the client credentials grant
		// gives the client's own id as its subject (RFC 9068 section
		// 2.2; ory/hydra). With dynamic client registration open, anyone
		// could get one for the hub's audience.
		return nil, &TokenError{Description: "the token is a client's own (client credentials), not a user's", Signed: true}
	}
	id.Groups = values(claim(claims, v.auth.Claims.Groups))
	// Of the claims the profiles entries read, only the values some entry
	// names are kept: all that choosing a profile asks, and no more than
	// the entries, whatever the token holds.
	for _, p := range v.auth.Profiles {
		if id.Has(p.Claim, p.Value) || len(id.Claims) == MaxClaims && id.Claims[p.Claim] == nil {
			continue
		}
		if holds(claim(claims, p.Claim), p.Value) {
			if id.Claims == nil {
				id.Claims = map[string][]string{}
			}
			id.Claims[p.Claim] = append(id.Claims[p.Claim], p.Value)
		}
	}
	return id, nil
}

// discovered is what the hub learnt of the issuer from its metadata.
type discovered struct {
	keys          *keySet   // nil when the metadata names no jwks_uri
	introspection string    // its introspection_endpoint, checked; "" for none
	at            time.Time // when it was read
}

// discover is the issuer's metadata (discovery.go), fetched at the first
// token and again once it is older than jwks_refresh, so that keys moved
// to a new jwks_uri are taken from there, not from the old URL, whoever
// holds it now. A first discovery that fails is answered ErrUnavailable
// for MinRefetch before it is tried again; a later one that fails leaves
// the metadata held in use, and is tried again after MinRefetch. It is
// fetched apart from ctx (its values, not its end): one discovery at a
// time, bounded by fetchTimeout (a later one holds only the caller that
// makes it; the others go on with what is held), and a caller that goes
// away neither ends it nor has its end taken for the issuer's failure.
func (v *Verifier) discover(ctx context.Context) (*discovered, error) {
	found := v.found.Load()
	if found != nil && v.now().Sub(found.at) < v.auth.JWKSRefresh {
		return found, nil
	}
	if found == nil {
		v.discoverMu.Lock()
	} else if !v.discoverMu.TryLock() {
		return found, nil // being read again
	}
	defer v.discoverMu.Unlock()
	if now := v.found.Load(); now != found {
		return now, nil // read while this call waited
	}
	if !v.tried.IsZero() && v.now().Sub(v.tried) < MinRefetch {
		if found != nil {
			return found, nil
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, v.triedErr)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	md, at, err := fetchMetadata(dctx, v.client, v.auth.Issuer)
	if err == nil && md.JWKSURL != "" {
		err = checkJWKSURL(md.JWKSURL)
	}
	if err == nil && md.Introspection != "" && v.in != nil && v.in.conf.URL == "" {
		err = checkMetadataURL("introspection_endpoint", md.Introspection)
	}
	if err != nil {
		v.tried, v.triedErr = v.now(), err
		if found != nil {
			v.logger.Warn("http.auth: cannot read the issuer's metadata again; using what was read before", "issuer", v.auth.Issuer, "err", err)
			return found, nil
		}
		v.logger.Warn("http.auth: cannot read the issuer's metadata; its tokens are answered 503", "issuer", v.auth.Issuer, "err", err)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	next := &discovered{introspection: md.Introspection, at: v.now()}
	switch {
	case md.JWKSURL == "":
	case found != nil && found.keys != nil && found.keys.url == md.JWKSURL:
		next.keys = found.keys // the keys held, still theirs
	default:
		next.keys = &keySet{url: md.JWKSURL, client: v.client, logger: v.logger, refresh: v.auth.JWKSRefresh, minRefetch: MinKeyRefetch, now: v.now, sleep: v.sleep}
	}
	if found == nil || next.keys != found.keys || next.introspection != found.introspection {
		v.logger.Info("http.auth: discovered the issuer", "issuer", v.auth.Issuer, "metadata", at, "jwks_uri", md.JWKSURL,
			"introspection_endpoint", md.Introspection)
	}
	v.found.Store(next)
	return next, nil
}

// signatureError is what the key set's refusal means, in words for the
// caller. It is told apart by the key set's sentinels alone, never by
// text: an error may quote the token's kid, which is the caller's.
func signatureError(err error) error {
	switch {
	case errors.Is(err, errKeysUnavailable):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.Is(err, errUnknownKey):
		return &TokenError{Description: "the token is signed by an unknown key"}
	case errors.Is(err, errBadSignature):
		return &TokenError{Description: "the token's signature does not verify"}
	case errors.Is(err, errMalformed):
		return &TokenError{Description: "the token is malformed"}
	}
	return &TokenError{Description: "the token is refused"}
}
