package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's signing keys (its JWKS), shaped as an oidc.KeySet. It
// closes two gaps of go-oidc's RemoteKeySet: that fetches the keys again
// for every token its cached keys do not verify, so each forged token
// costs the issuer a request; and it keeps a key for ever once fetched,
// so a key the issuer withdrew goes on verifying. Here the keys are
// fetched again when a token names a key id not among them (a rotation:
// the token waits for the next fetch allowed, at most once every
// minRefetch, MinKeyRefetch), and whenever they are older than refresh; a
// bad signature by a known key fetches nothing.
type keySet struct {
	url        string
	client     *http.Client
	logger     *slog.Logger
	refresh    time.Duration
	minRefetch time.Duration
	now        func() time.Time
	sleep      func(ctx context.Context, d time.Duration) error // waits d or until ctx ends

	fetchMu sync.Mutex // held by the one fetch under way; never while verifying

	mu      sync.Mutex // guards keys, fetched, tried and failed
	keys    []jose.JSONWebKey
	fetched time.Time // when keys were fetched
	tried   time.Time // when a fetch was last tried, successful or not
	failed  error     // why the fetch last tried failed; nil when it did not
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxJWKS bounds the key set document read.
const maxJWKS = 1 << 20

// The key set's refusals, which signatureError tells apart (errors.Is,
// never their text, which may quote the token's kid).
var (
	// errKeysUnavailable: the issuer's keys cannot be fetched.
	errKeysUnavailable = errors.New("identity: the issuer's keys cannot be fetched")
	errUnknownKey      = errors.New("unknown signing key")
	errBadSignature    = errors.New("bad signature")
	errMalformed       = errors.New("malformed jwt")
)

// VerifySignature verifies jwt's signature by the issuer's keys.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, signingAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, errMalformed
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, fetched, tried := k.snapshot()
	unknown := !hasKey(keys, kid)
	due := fetched.IsZero() || k.now().Sub(fetched) > k.refresh || unknown
	if wait := k.minRefetch - k.now().Sub(tried); unknown && !tried.IsZero() && wait > 0 {
		// A key the issuer may have just rotated to: wait for the next
		// fetch allowed rather than refuse the token (a caller is held at
		// most minRefetch; forged tokens still cost one fetch a
		// minRefetch).
		if err := k.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	var fetchErr error
	if due && (tried.IsZero() || k.now().Sub(tried) >= k.minRefetch) {
		if keys, fetchErr = k.fetch(ctx, tried); fetchErr != nil && keys == nil {
			return nil, fetchErr
		}
	}
	if keys == nil {
		return nil, errKeysUnavailable
	}
	for i := range keys {
		if kid == "" || keys[i].KeyID == kid {
			if payload, err := jws.Verify(&keys[i]); err == nil {
				return payload, nil
			}
		}
	}
	if !hasKey(keys, kid) {
		if fetchErr != nil {
			// A key the issuer may have rotated to, and its keys cannot be
			// fetched now: the hub's trouble, not a forged token.
			return nil, fetchErr
		}
		return nil, fmt.Errorf("%w %q", errUnknownKey, clip(kid))
	}
	return nil, errBadSignature
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	if kid == "" {
		return len(keys) > 0
	}
	for _, key := range keys {
		if key.KeyID == kid {
			return true
		}
	}
	return false
}

func (k *keySet) snapshot() ([]jose.JSONWebKey, time.Time, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetched, k.tried
}

// fetch fetches the keys, unless another fetch has since it was decided
// (tried moved on): then that one's keys, and its failure, are the
// answer. On failure the keys held before stay, and are returned with
// the error.
func (k *keySet) fetch(ctx context.Context, tried time.Time) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.Lock()
	if k.tried.After(tried) {
		defer k.mu.Unlock()
		return k.keys, k.failed
	}
	k.mu.Unlock()
	keys, err := k.get(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tried = k.now()
	if err != nil {
		k.logger.Warn("http.auth: cannot fetch the issuer's keys", "jwks_uri", k.url, "err", err, "keys_held", len(k.keys))
		k.failed = fmt.Errorf("%w: %v", errKeysUnavailable, err)
		return k.keys, k.failed
	}
	k.logger.Info("http.auth: fetched the issuer's signing keys", "jwks_uri", k.url, "keys", len(keys))
	k.keys, k.fetched, k.failed = keys, k.tried, nil
	return keys, nil
}

// get reads the JWKS document; keys of no use for signing are dropped.
// It is read apart from ctx (its values, not its end), bounded by
// fetchTimeout: the caller's going away is no failure of the issuer's,
// to be remembered for minRefetch.
func (k *keySet) get(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, body, err := send(k.client, req, maxJWKS)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", k.url, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("GET %s: %v", k.url, err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, key := range set.Keys {
		if key.Use == "" || key.Use == "sig" {
			keys = append(keys, key)
		}
	}
	return keys, nil
}
