package auth

import (
	"context"
	"errors"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// UseVault makes s seal and open with v in place of the vault its state
// directory's key opens: a state directory being imported, read with the
// key it was sealed with. Call it before s is used.
func (s *Store) UseVault(v *vault.Vault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vault = v
}

// Import copies r, a record read from a state directory, into s, a shared
// store (or one user's of it, ForUserHash), under the store's lock of its
// server, so that no renewal on a replica meanwhile is lost: a record the
// store does not have is copied, an older one updated; one with the same
// tokens is left; a newer one (a later sign-in or renewal) is kept unless
// force. With dryRun nothing is written.
func (s *Store) Import(r *Record, force, dryRun bool) (shared.Outcome, error) {
	if s.db == nil {
		return "", errors.New("token store: import is into a shared store")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*lockWait)
	defer cancel()
	var out shared.Outcome
	err := s.db.Locked(ctx, s.ns(), r.Server, lockWait, func(tx shared.Tx) error {
		cur, err := s.sharedRead(ctx, tx, r.Server)
		if err != nil && !errors.Is(err, ErrNoToken) {
			return err
		}
		exists := err == nil
		same := exists && cur.URL == r.URL && cur.AccessToken == r.AccessToken && cur.RefreshToken == r.RefreshToken && cur.ClientID == r.ClientID
		out = shared.Decide(exists, same, exists && obtained(cur).After(obtained(r)), force)
		if !out.Writes() || dryRun {
			return nil
		}
		return s.sharedWrite(ctx, tx, r)
	})
	return out, err
}

// obtained is when r's access token was obtained, as far as it says.
func obtained(r *Record) time.Time {
	if !r.Issued.IsZero() {
		return r.Issued
	}
	return r.Expiry
}
