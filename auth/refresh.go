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

// refreshAhead renews a token this long before it expires.
const refreshAhead = time.Minute

// Refresh renews r's access token with its refresh token, sending the
// resource parameter (RFC 8707), and keeps a rotated refresh token.
func Refresh(ctx context.Context, client *http.Client, r *Record) error {
	if !r.CanRefresh() {
		return errors.New("the sign-in cannot be renewed (no refresh token)")
	}
	if err := CheckURL(r.TokenEndpoint); err != nil {
		return err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}
	if r.Resource != "" {
		form.Set("resource", r.Resource)
	}
	if r.AuthMethod != "client_secret_basic" {
		form.Set("client_id", r.ClientID)
		if r.ClientSecret != "" && r.AuthMethod != "none" {
			form.Set("client_secret", r.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if r.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(r.ClientSecret))
	}
	resp, err := client.Do(req)
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
	r.Expiry = time.Time{}
	if t.ExpiresIn > 0 {
		r.Expiry = time.Now().Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	if t.Scope != "" {
		r.Scopes = strings.Fields(t.Scope)
	}
	return nil
}

// Source hands out a server's current access token, renewing it before
// it expires and saving what renewal changes.
type Source struct {
	store  *Store
	client *http.Client

	mu  sync.Mutex // guards rec
	rec *Record
}

// NewSource is the token source of server at serverURL; ErrNoToken when
// there is no sign-in for it.
func NewSource(store *Store, server, serverURL string) (*Source, error) {
	rec, err := store.Load(server, serverURL)
	if err != nil {
		return nil, err
	}
	return &Source{store: store, client: SafeClient(), rec: rec}, nil
}

// Header is the Authorization header to send, renewed first when the
// token expires within a minute.
func (s *Source) Header(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rec.Expiry.IsZero() && time.Until(s.rec.Expiry) < refreshAhead && s.rec.CanRefresh() {
		if err := s.refreshLocked(ctx); err != nil {
			return "", err
		}
	}
	return "Bearer " + s.rec.AccessToken, nil
}

// Renew renews the token now, after the server refused it (401).
func (s *Source) Renew(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshLocked(ctx)
}

func (s *Source) refreshLocked(ctx context.Context) error {
	next := *s.rec
	if err := Refresh(ctx, s.client, &next); err != nil {
		return err
	}
	if err := s.store.Save(&next); err != nil {
		return fmt.Errorf("save the renewed token: %w", err)
	}
	s.rec = &next
	return nil
}
