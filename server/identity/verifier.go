package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
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
	// nbfLeeway is the clock skew allowed a token's nbf (go-oidc allows
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
// issuer's keys (discovered by OpenID Connect discovery, fetched again on
// rotation), iss, exp, nbf, and an aud that names the hub (RFC 8707:
// a token for another resource is refused). It is safe for concurrent
// use and starts no goroutine.
type Verifier struct {
	auth   config.HTTPAuth
	logger *slog.Logger
	client *http.Client
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error // the keys' wait (keySet.sleep); tests make it move their clock

	verifier atomic.Pointer[oidc.IDTokenVerifier] // once discovered; read without a lock

	discoverMu sync.Mutex // held by the one discovery under way; guards tried and triedErr
	tried      time.Time  // last failed discovery
	triedErr   error
}

// NewVerifier checks tokens as auth says, logging to logger (nil:
// nowhere) what it learns of the issuer. client makes the requests to the
// issuer (nil: http.DefaultClient); now is the clock (nil: time.Now).
// Nothing is fetched until the first token comes: a hub whose issuer is
// down starts, and its static tokens work.
func NewVerifier(auth config.HTTPAuth, logger *slog.Logger, client *http.Client, now func() time.Time) *Verifier {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if now == nil {
		now = time.Now
	}
	if auth.JWKSRefresh <= 0 {
		auth.JWKSRefresh = config.DefaultJWKSRefresh
	}
	return &Verifier{auth: auth, logger: logger, client: client, now: now, sleep: sleep}
}

// Verify checks raw and returns its caller's identity: a *TokenError for
// a token refused, ErrUnavailable when the issuer cannot be reached.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Identity, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, &TokenError{Description: "not a JWT"}
	}
	verifier, err := v.discover(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		return nil, tokenError(err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, &TokenError{Description: "the claims are not a JSON object", Signed: true}
	}
	if nbf, ok := claims["nbf"].(float64); ok && v.now().Add(nbfLeeway).Before(time.Unix(int64(nbf), 0)) {
		return nil, &TokenError{Description: "the token is not valid yet", Signed: true}
	}
	if missing := v.missingScopes(claims); len(missing) > 0 {
		return nil, &ScopeError{Need: v.auth.Scopes}
	}
	return v.identity(claims)
}

// missingScopes are the scopes of http.auth.scopes claims does not grant:
// scope, space-separated (RFC 9068, RFC 8693), or scp, a list (ory/hydra,
// Entra ID).
func (v *Verifier) missingScopes(claims map[string]any) []string {
	if len(v.auth.Scopes) == 0 {
		return nil
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
	var missing []string
	for _, s := range v.auth.Scopes {
		if !granted[s] {
			missing = append(missing, s)
		}
	}
	return missing
}

// identity reads the caller's identity from claims, bounded.
func (v *Verifier) identity(claims map[string]any) (*Identity, error) {
	id := &Identity{Kind: KindJWT}
	if s, ok := claim(claims, v.auth.Claims.Subject).(string); ok {
		id.Subject = clip(s)
	}
	if id.Subject == "" {
		return nil, &TokenError{Description: "the token has no subject (" + v.auth.Claims.Subject + ")", Signed: true}
	}
	if s, ok := claim(claims, v.auth.Claims.Name).(string); ok {
		id.Name = clip(s)
	}
	id.Groups = values(claim(claims, v.auth.Claims.Groups))
	// Of the claims the profiles entries read, only the values some entry
	// names are kept: all that choosing a profile asks, and no more than
	// the entries, whatever the token holds.
	for _, p := range v.auth.Profiles {
		if id.Has(p.Claim, p.Value) || len(id.Claims) == MaxClaims && id.Claims[p.Claim] == nil {
			continue
		}
		for _, got := range values(claim(claims, p.Claim)) {
			if got == p.Value {
				if id.Claims == nil {
					id.Claims = map[string][]string{}
				}
				id.Claims[p.Claim] = append(id.Claims[p.Claim], p.Value)
				break
			}
		}
	}
	return id, nil
}

// discover is the verifier of the issuer's tokens, from its discovery
// document, fetched once; a failure is answered for MinRefetch before it
// is tried again.
func (v *Verifier) discover(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	if verifier := v.verifier.Load(); verifier != nil {
		return verifier, nil
	}
	v.discoverMu.Lock()
	defer v.discoverMu.Unlock()
	if verifier := v.verifier.Load(); verifier != nil {
		return verifier, nil // discovered while this call waited
	}
	if !v.tried.IsZero() && v.now().Sub(v.tried) < MinRefetch {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, v.triedErr)
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.client), fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, v.auth.Issuer)
	var doc struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err == nil {
		if err = provider.Claims(&doc); err == nil && doc.JWKSURL == "" {
			err = errors.New("its discovery document names no jwks_uri")
		}
	}
	if err != nil {
		v.tried, v.triedErr = v.now(), err
		v.logger.Warn("http.auth: cannot read the issuer's discovery document; JWTs are answered 503", "issuer", v.auth.Issuer, "err", err)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	v.logger.Info("http.auth: discovered the issuer", "issuer", v.auth.Issuer, "jwks_uri", doc.JWKSURL)
	keys := &keySet{url: doc.JWKSURL, client: v.client, logger: v.logger, refresh: v.auth.JWKSRefresh, minRefetch: MinKeyRefetch, now: v.now, sleep: v.sleep}
	algs := make([]string, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = string(a)
	}
	verifier := oidc.NewVerifier(v.auth.Issuer, keys, &oidc.Config{ClientID: v.auth.Audience, SupportedSigningAlgs: algs, Now: v.now})
	v.verifier.Store(verifier)
	return verifier, nil
}

// tokenError is what go-oidc's refusal means, in words for the caller.
// go-oidc's errors are text only (its own and the key set's), so they
// are told apart by it, here alone.
func tokenError(err error) error {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return &TokenError{Description: "the token has expired", Signed: true}
	case strings.Contains(msg, errKeysUnavailable.Error()):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case strings.Contains(msg, "expected audience"):
		return &TokenError{Description: "the token is not for this resource (aud)", Signed: true}
	case strings.Contains(msg, "issued by a different provider"):
		return &TokenError{Description: "the token is of another issuer", Signed: true}
	case strings.Contains(msg, "before the nbf"):
		return &TokenError{Description: "the token is not valid yet", Signed: true}
	case strings.Contains(msg, "unknown signing key"):
		return &TokenError{Description: "the token is signed by an unknown key"}
	case strings.Contains(msg, "failed to verify signature"):
		return &TokenError{Description: "the token's signature does not verify"}
	case strings.Contains(msg, "malformed"), strings.Contains(msg, "unmarshal"), strings.Contains(msg, "signature"):
		return &TokenError{Description: "the token is malformed"}
	}
	return &TokenError{Description: "the token is refused"}
}
