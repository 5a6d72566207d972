package auth

import (
	"context"
	"fmt"
	"strings"
)

// Moved reports, after the server refused the sign-in's token (401 with
// the challenge wwwAuthenticate), whether the server now names other
// authorization servers than the one the sign-in was made with: then the
// sign-in is not used, nor renewed at the old one, and a new sign-in
// registers anew (MCP 2026-07-28: registrations are kept by issuer). A
// sign-in saved before records named their authorization server, and a
// server whose metadata cannot be read (or names another resource), are given the benefit of the
// doubt: nil. A sign-in on file newer than the one refused (made since,
// by `auth login`) is taken up, and is no move.
func (s *Source) Moved(ctx context.Context, wwwAuthenticate string) error {
	s.mu.Lock()
	if disk, err := s.store.Load(s.rec.Server, s.rec.URL); err == nil && disk.AccessToken != s.rec.AccessToken {
		s.mu.Unlock()
		return nil // Renew takes it up
	}
	was, serverURL := s.rec.AuthServer, s.rec.URL
	s.mu.Unlock()
	if was == "" {
		return nil
	}
	var named string
	if m := resourceMetadataParam().FindStringSubmatch(wwwAuthenticate); m != nil {
		named = m[1]
	}
	// Metadata naming another resource is not the server's (RFC 9728
	// §3.3): no more a move than metadata that cannot be read.
	prm, err := fetchResourceMetadata(ctx, s.client, serverURL, named)
	if err != nil || len(prm.AuthorizationServers) == 0 {
		return nil
	}
	for _, as := range prm.AuthorizationServers {
		if sameIssuer(as, was) {
			return nil
		}
	}
	return fmt.Errorf("the server now names authorization server %s, not %s, which the sign-in was made with",
		strings.Join(prm.AuthorizationServers, ", "), was)
}
