package identity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// introspector checks opaque access tokens by the issuer's token
// introspection endpoint (RFC 7662), with http.auth.introspection. Each
// answer is kept, by the token's SHA-256, for CacheTTL at most and never
// past the token's exp, so that a busy client costs the issuer one
// request a CacheTTL, not one a call; a token revoked at the issuer
// stops working when its answer expires. Callers that bring the same
// token at once share one request. The endpoint being unreachable, or
// answering anything but 200 and a JSON object, is ErrUnavailable (the
// hub's trouble, answered 503: a 401 would tell the client to drop a
// token that may be good), and is not kept.
type introspector struct {
	v      *Verifier
	conf   config.AuthIntrospection
	client *http.Client  // the Verifier's, following no redirect
	slots  chan struct{} // one per request under way to the endpoint
	down   atomic.Bool   // the last request failed: logged once, until one succeeds
	max    int           // answers kept at most: MaxIntrospectionCache (a test's fewer)

	mu      sync.Mutex // guards cache and flights
	cache   map[[sha256.Size]byte]answer
	flights map[[sha256.Size]byte]*flight
}

// answer is what introspecting a token decided: its identity, or why it
// is refused; used until until (zero: not kept). exp is an active
// token's exp (zero: none): past it the token is refused as expired
// without asking, and not counted as a guess, until expiredGrace later.
type answer struct {
	id    *Identity
	err   error
	until time.Time
	exp   time.Time
}

// flight is one introspection under way; done is closed when its answer
// is set.
type flight struct {
	done chan struct{}
	answer
}

const (
	// MaxIntrospectionCache bounds the answers kept (STYLE 15): when it
	// is full the expired ones are dropped, then refusals, then (for an
	// identity) any, so that many tokens cost requests to the issuer,
	// never memory, and guessed ones never push out the team's.
	MaxIntrospectionCache = 1024
	// expiredGrace is how long past its exp a token seen active is still
	// known: refused as expired (Signed, as a JWT's would be) without a
	// request, rather than as inactive, which counts against the address
	// (a team behind one NAT renews expired tokens all day).
	expiredGrace = time.Hour
	// maxIntrospections bounds the requests under way to the endpoint.
	maxIntrospections = 8
	// maxIntrospectionBody bounds an introspection response read.
	maxIntrospectionBody = 1 << 20
)

func newIntrospector(v *Verifier, conf config.AuthIntrospection) *introspector {
	if conf.CacheTTL <= 0 {
		conf.CacheTTL = config.DefaultIntrospectionTTL
	}
	// A redirect is not followed: it would send the caller's token, and
	// the hub's secret, to a URL nobody configured (a 3xx is answered as
	// any status but 200 is, ErrUnavailable).
	client := *v.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &introspector{v: v, conf: conf, client: &client, slots: make(chan struct{}, maxIntrospections),
		max: MaxIntrospectionCache, cache: map[[sha256.Size]byte]answer{}, flights: map[[sha256.Size]byte]*flight{}}
}

// verify is Verify for a token checked by introspection.
func (in *introspector) verify(ctx context.Context, raw string) (*Identity, error) {
	sum := sha256.Sum256([]byte(raw))
	in.mu.Lock()
	if a, ok := in.cache[sum]; ok {
		now := in.v.now()
		switch {
		case now.Before(a.until):
			in.mu.Unlock()
			return a.id, a.err
		case a.id != nil && !a.exp.IsZero() && !now.Before(a.exp) && now.Before(a.exp.Add(expiredGrace)):
			in.mu.Unlock()
			return nil, &TokenError{Description: "the token has expired", Signed: true}
		}
		delete(in.cache, sum)
	}
	f, joined := in.flights[sum]
	if !joined {
		f = &flight{done: make(chan struct{})}
		in.flights[sum] = f
	}
	in.mu.Unlock()
	if !joined {
		// This caller asks; it is held at most as long as ask takes
		// (its requests are apart from ctx's end, as the others wait for
		// it; each is bounded by fetchTimeout).
		f.answer = in.ask(ctx, raw)
		in.mu.Lock()
		delete(in.flights, sum)
		if !f.until.IsZero() {
			in.put(sum, f.answer)
		}
		in.mu.Unlock()
		close(f.done)
	}
	// Waited for even when ctx ends (at most as long as ask takes): a
	// caller that hangs up gets the token's answer, so that hanging up
	// is no way to try tokens without a refusal counted against it.
	<-f.done
	return f.id, f.err
}

// put keeps a under sum, making room first when the cache is full: the
// expired answers are dropped, then a refusal; a refusal is not kept in
// place of an identity, so that a flood of guessed tokens pushes out
// only its own refusals, never the team's answers. in.mu is held.
func (in *introspector) put(sum [sha256.Size]byte, a answer) {
	if len(in.cache) >= in.max {
		now := in.v.now()
		for k, e := range in.cache {
			if !now.Before(e.until) && (e.exp.IsZero() || !now.Before(e.exp.Add(expiredGrace))) {
				delete(in.cache, k)
			}
		}
		for k, e := range in.cache {
			if len(in.cache) < in.max {
				break
			}
			if e.id == nil {
				delete(in.cache, k)
			}
		}
		for k := range in.cache {
			if len(in.cache) < in.max || a.id == nil {
				break
			}
			delete(in.cache, k)
		}
		if len(in.cache) >= in.max {
			return // a refusal, and every answer kept an identity
		}
	}
	in.cache[sum] = a
}

// ask introspects raw and decides.
func (in *introspector) ask(ctx context.Context, raw string) answer {
	endpoint := in.conf.URL
	if endpoint == "" {
		found, err := in.v.discover(ctx)
		if err != nil {
			return answer{err: err}
		}
		if found.introspection == "" {
			return answer{err: fmt.Errorf("%w: its metadata names no introspection_endpoint (set http.auth.introspection.url)", ErrUnavailable)}
		}
		endpoint = found.introspection
	}
	claims, err := in.post(ctx, endpoint, raw)
	if err != nil {
		if !in.down.Swap(true) {
			in.v.logger.Warn("http.auth: cannot introspect tokens; opaque tokens are answered 503 until it can", "introspection_endpoint", endpoint, "err", err)
		}
		return answer{err: fmt.Errorf("%w: %v", ErrUnavailable, err)}
	}
	if in.down.Swap(false) {
		in.v.logger.Info("http.auth: introspecting tokens again", "introspection_endpoint", endpoint)
	}
	now := in.v.now()
	until := now.Add(in.conf.CacheTTL)
	if active, _ := claims["active"].(bool); !active {
		// Not Signed: the issuer cannot say whether it was revoked,
		// expired or guessed, so it counts against the address.
		return answer{err: &TokenError{Description: "the token is not active (revoked, expired, or not the issuer's)"}, until: until}
	}
	var expires time.Time
	if exp, ok := claims["exp"].(float64); ok {
		if expires = time.Unix(int64(exp), 0); expires.Before(until) {
			until = expires
		}
	}
	id, err := in.check(claims, now)
	return answer{id: id, err: err, until: until, exp: expires}
}

// check checks an active token's introspection (RFC 7662 section 2.2):
// an access token (not a refresh token, which some issuers introspect
// as active too), of the issuer if it says (iss), for the hub (aud, RFC
// 8707: required, as for a JWT), exp to come and nbf passed if given, the
// scopes http.auth.scopes asks for; then the identity, read from the
// response's members as from a JWT's claims (hydra puts a session's
// claims under ext: claims: {groups: ext.groups}).
func (in *introspector) check(claims map[string]any, now time.Time) (*Identity, error) {
	if use, ok := claims["token_use"].(string); ok && use != "access_token" {
		return nil, &TokenError{Description: "the token is not an access token (token_use)", Signed: true}
	}
	if typ, ok := claims["token_type"].(string); ok && (strings.EqualFold(typ, "refresh_token") || strings.EqualFold(typ, "refresh")) {
		return nil, &TokenError{Description: "the token is not an access token (token_type)", Signed: true}
	}
	if iss, ok := claims["iss"]; ok && iss != in.v.auth.Issuer {
		return nil, &TokenError{Description: "the token is of another issuer", Signed: true}
	}
	if !holds(claims["aud"], in.v.auth.Audience) {
		return nil, &TokenError{Description: "the token is not for this resource (aud)", Signed: true}
	}
	if exp, ok := claims["exp"].(float64); ok && !now.Before(time.Unix(int64(exp), 0)) {
		return nil, &TokenError{Description: "the token has expired", Signed: true}
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(nbfLeeway).Before(time.Unix(int64(nbf), 0)) {
		return nil, &TokenError{Description: "the token is not valid yet", Signed: true}
	}
	if !in.v.grantsScopes(claims) {
		return nil, &ScopeError{Need: in.v.auth.Scopes}
	}
	return in.v.identity(claims)
}

// post sends raw to the endpoint (RFC 7662 section 2.1), the hub
// authenticating with HTTP Basic when it has a client_id, and reads the
// response's JSON object. Its request is apart from ctx's end, bounded
// by fetchTimeout, as other callers may wait for it.
func (in *introspector) post(ctx context.Context, endpoint, raw string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		return nil, errors.New("too many introspections under way")
	}
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if in.conf.ClientID != "" {
		// RFC 6749 section 2.3.1: each form-urlencoded first.
		req.SetBasicAuth(url.QueryEscape(in.conf.ClientID), url.QueryEscape(in.conf.ClientSecret))
	}
	resp, body, err := send(in.client, req, maxIntrospectionBody)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s", endpoint, resp.Status)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil || claims == nil {
		return nil, fmt.Errorf("POST %s: the answer is not a JSON object", endpoint)
	}
	return claims, nil
}
