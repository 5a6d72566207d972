package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// tokenNS is the namespace of sign-in records in a shared store.
const tokenNS = "token"

// NewSharedStore keeps records in db, a store every replica shares
// (`store: postgres://...`), each sealed with the vault exactly as in a
// .sealed file; dir is the state directory's token directory, where the
// vault's key is looked for, and it must come from DYNAMIC_MCP_VAULT_KEY:
// a key of this machine's keychain or key file would seal records no
// other replica can open. Changes of a record are made under db's lock of
// its server (a PostgreSQL advisory lock), so a renewal is single-flight
// across replicas as it is across processes with the state directory.
func NewSharedStore(dir string, db SharedDB) *Store { return &Store{dir: dir, db: db} }

// SharedDB is what a Store keeps its records in when every replica shares
// them: values, their keys, and changes under a lock every replica
// honours.
type SharedDB interface {
	shared.Tx
	shared.Lister
	shared.Locker
}

// ns is the namespace of the store's records in db: tokenNS, or a user's
// own (ForUser) for the records of that user alone.
func (s *Store) ns() string {
	if s.user != "" {
		return tokenNS + ":user:" + s.user
	}
	return tokenNS
}

// sharedVault opens the vault for a shared store: its key must be the
// one every replica has.
func (s *Store) sharedVault(ctx context.Context, tx shared.Tx) (*vault.Vault, error) {
	v, err := s.openVault()
	if err != nil {
		return nil, err
	}
	if v.Source != "env" {
		return nil, fmt.Errorf("token store: with store:, every replica seals sign-ins with the same key: set %s (base64 of 32 bytes) to the same value on each", vault.EnvKey)
	}
	root := s.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	if !root.keyChecked {
		// A key that is not the replicas' is said at once, naming its
		// source, not as each record failing to open; in tx, so that a
		// first use inside a transaction takes no second connection.
		if err := vault.CheckShared(ctx, tx, v); err != nil {
			return nil, fmt.Errorf("token store: %w", err)
		}
		root.keyChecked = true
	}
	return v, nil
}

// sharedRead returns server's record from tx, or ErrNoToken.
func (s *Store) sharedRead(ctx context.Context, tx shared.Tx, server string) (*Record, error) {
	v, err := s.sharedVault(ctx, tx)
	if err != nil {
		return nil, err
	}
	b, err := tx.Get(ctx, s.ns(), server)
	if errors.Is(err, shared.ErrNotFound) {
		return nil, ErrNoToken
	}
	if err != nil {
		return nil, err
	}
	return s.sharedOpen(v, server, b)
}

// sharedOpen opens b, server's sealed record in the shared store.
func (s *Store) sharedOpen(v *vault.Vault, server string, b []byte) (*Record, error) {
	b, err := v.Open(b, s.sealedFor(server))
	if err != nil {
		return nil, fmt.Errorf("the shared store's sign-in of %s: %w", server, err)
	}
	r := new(Record)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("the shared store's sign-in of %s: %w", server, err)
	}
	r.migrate()
	return r, nil
}

// sharedLoad is sharedRead's record when it is the sign-in of
// serverURL; ErrNoToken otherwise.
func (s *Store) sharedLoad(ctx context.Context, tx shared.Tx, server, serverURL string) (*Record, error) {
	r, err := s.sharedRead(ctx, tx, server)
	if err == nil && r.URL != serverURL {
		return nil, fmt.Errorf("%w (the sign-in on file is for %s)", ErrNoToken, r.URL)
	}
	return r, err
}

// sharedWrite seals r and writes it to tx.
func (s *Store) sharedWrite(ctx context.Context, tx shared.Tx, r *Record) error {
	v, err := s.sharedVault(ctx, tx)
	if err != nil {
		return err
	}
	s.stamp(r)
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Put(ctx, s.ns(), r.Server, v.Seal(b, s.sealedFor(r.Server)))
}

// sharedList returns every record of the shared store, by server, read
// in one query.
func (s *Store) sharedList(ctx context.Context) ([]*Record, error) {
	all, err := s.db.All(ctx, s.ns())
	if err != nil || len(all) == 0 {
		return nil, err
	}
	v, err := s.sharedVault(ctx, s.db)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, server := range slices.Sorted(maps.Keys(all)) {
		r, err := s.sharedOpen(v, server, all[server])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// lockedRecord is server's record as one holding its lock sees it.
type lockedRecord struct {
	load  func(serverURL string) (*Record, error)
	write func(r *Record) error
}

// withLock runs fn holding server's lock: the state directory's file
// lock, or the shared store's advisory lock, whose transaction commits
// what fn wrote when fn returns nil. Both wait at most lockWait.
func (s *Store) withLock(ctx context.Context, server string, fn func(l lockedRecord) error) error {
	if s.db != nil {
		return s.db.Locked(ctx, s.ns(), server, lockWait, func(tx shared.Tx) error {
			return fn(lockedRecord{
				load:  func(serverURL string) (*Record, error) { return s.sharedLoad(ctx, tx, server, serverURL) },
				write: func(r *Record) error { return s.sharedWrite(ctx, tx, r) },
			})
		})
	}
	l, err := s.lock(ctx, server)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return fn(lockedRecord{
		load:  func(serverURL string) (*Record, error) { return s.load(ctx, server, serverURL, true) },
		write: s.write,
	})
}
