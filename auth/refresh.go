package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// refreshAhead renews a token this long before it expires, or half its
// lifetime before when that is shorter (see due).
const refreshAhead = time.Minute

// due reports whether r's access token is to be renewed at now: within
// refreshAhead of its expiry, or of half its lifetime for a token that
// lives less than two minutes (so that a token of seconds is not renewed
// on every call).
func due(r *Record, now time.Time) bool {
	if r.Expiry.IsZero() {
		return false
	}
	ahead := refreshAhead
	if life := r.Expiry.Sub(r.Issued); !r.Issued.IsZero() && life > 0 && life/2 < ahead {
		ahead = life / 2
	}
	return r.Expiry.Sub(now) < ahead
}

// Refresh renews r's access token with its refresh token, sending the
// resource parameter (RFC 8707), and keeps a rotated refresh token.
func Refresh(ctx context.Context, hc *http.Client, r *Record) error {
	if !r.CanRefresh() {
		return errors.New("the sign-in cannot be renewed (no refresh token)")
	}
	if err := CheckURL(r.TokenEndpoint); err != nil {
		return err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}
	req, err := tokenRequest(ctx, r.TokenEndpoint, form, r.Resource, client{id: r.ClientID, secret: r.ClientSecret, method: r.AuthMethod})
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("refresh the token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var t struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &t)
	if resp.StatusCode != http.StatusOK || t.AccessToken == "" {
		if t.Error != "" {
			return fmt.Errorf("refresh the token: %s: %s", t.Error, t.Description)
		}
		return fmt.Errorf("refresh the token: HTTP %d", resp.StatusCode)
	}
	r.AccessToken, r.TokenType = t.AccessToken, t.TokenType
	if t.RefreshToken != "" {
		r.RefreshToken = t.RefreshToken // rotated
	}
	r.Expiry, r.Issued = time.Time{}, time.Now()
	if t.ExpiresIn > 0 {
		r.Expiry = r.Issued.Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	if t.Scope != "" {
		r.Scopes = strings.Fields(t.Scope)
	}
	return nil
}

// tokenRequest is a POST of form to a token endpoint (RFC 6749 section
// 3.2), with resource when there is one (RFC 8707), authenticated as c:
// by HTTP Basic for client_secret_basic (each part form-urlencoded
// first, section 2.3.1), else by client_id, and client_secret unless the
// method is none, in the form.
func tokenRequest(ctx context.Context, endpoint string, form url.Values, resource string, c client) (*http.Request, error) {
	if resource != "" {
		form.Set("resource", resource)
	}
	if c.method != "client_secret_basic" {
		form.Set("client_id", c.id)
		if c.secret != "" && c.method != "none" {
			form.Set("client_secret", c.secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.method == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	}
	return req, nil
}

// Source hands out a server's current access token, renewing it before
// it expires and saving what renewal changes.
//
// Other processes may hold a Source of the same sign-in (the hubs of
// other clients): a renewal takes the store's lock of the server, re-reads
// the record, and renews only when the record on file is still due (or
// still the token the server refused); when another process renewed it
// meanwhile, that renewal is used. The new record is saved before the lock
// is let go. So a refresh token is never used twice, which an
// authorization server that rotates refresh tokens takes as a theft and
// answers by revoking the grant (OAuth 2.1 §4.3.1; ory/hydra, Notion).
type Source struct {
	store  *Store
	client *http.Client

	mu  sync.Mutex // guards rec, and makes this process's renewals take turns
	rec *Record
}

// NewSource is the token source of server at serverURL; ErrNoToken when
// there is no sign-in for it, ErrOtherResource (an ErrNoToken) when only
// one for another resource: made by an earlier version from protected
// resource metadata that named another server's resource
// (checkResource), its token is that server's, and is not sent here.
func NewSource(store *Store, server, serverURL string) (*Source, error) {
	rec, err := store.Load(server, serverURL)
	if err != nil {
		return nil, err
	}
	if rec.Resource != "" && !resourceCovers(rec.Resource, serverURL) {
		return nil, fmt.Errorf("%w (resource %s, not %s)", ErrOtherResource, rec.Resource, serverURL)
	}
	return &Source{store: store, client: SafeClient(), rec: rec}, nil
}

// Header is the Authorization header to send, renewed first when the
// token is due (see due).
func (s *Source) Header(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if due(s.rec, time.Now()) && s.rec.CanRefresh() {
		if err := s.renewLocked(ctx); err != nil {
			return "", err
		}
	}
	return "Bearer " + s.rec.AccessToken, nil
}

// Renew renews the token after the server refused it (401); refused is
// the Authorization header the refused request carried ("" when not
// known). When this source holds another token since (a call in flight
// with the same token was refused too, and renewed it), that one is used
// as it is: renewing again would refuse the token the other call now
// retries with. When another process has renewed it, its token is taken.
func (s *Source) Renew(ctx context.Context, refused string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refused != "" && refused != "Bearer "+s.rec.AccessToken {
		return nil
	}
	return s.renewLocked(ctx)
}

// renewLocked renews the token under the store's lock of the server
// (a file lock, or the shared store's advisory lock), from the record
// on file: a record on file with another access token, not due, was
// renewed (or signed in again) by someone else since this source read it,
// and is taken as it is.
func (s *Source) renewLocked(ctx context.Context) error {
	locked := false
	err := s.store.withLock(ctx, s.rec.Server, func(l lockedRecord) error {
		locked = true
		disk, err := l.load(s.rec.URL)
		if err != nil {
			return fmt.Errorf("renew the token: read the sign-in again: %w", err)
		}
		if disk.AccessToken != s.rec.AccessToken && !due(disk, time.Now()) {
			s.rec = disk
			return nil
		}
		next := *disk
		if err := Refresh(ctx, s.client, &next); err != nil {
			return err
		}
		// The old refresh token is spent: the new record is used even when
		// it cannot be saved, and the error says so.
		s.rec = &next
		if err := l.write(&next); err != nil {
			return fmt.Errorf("save the renewed token: %w", err)
		}
		return nil
	})
	if err != nil && !locked {
		return fmt.Errorf("renew the token: %w", err) // the lock was not had: "the token store is busy"
	}
	return err
}
