package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Secrets on a shared store (store: postgres://...): one value per name
// in SecretNS, each sealed as the file is (this vault's AES-GCM) for the
// label "secret:NAME", so that the database never holds a plaintext and a
// value moved to another name does not open. Every replica, and every
// `secret` command, must seal with the same key: DYNAMIC_MCP_VAULT_KEY,
// checked against the store by OpenShared.

// SecretNS is the namespace of secrets in a shared store.
const SecretNS = "secret"

// SecretsChannel is the shared store's notification of a secret set or
// removed: the replicas read their config again.
const SecretsChannel = "dynamic_mcp_secrets"

// checkNS/checkKey hold a blob sealed by the first key that used the
// store: a key that does not open it is not the replicas' key.
const (
	checkNS    = "vault"
	checkKey   = "check"
	checkLabel = "dynamic-mcp vault check"
)

// sharedWait bounds each exchange of the secrets with the shared store.
const sharedWait = 10 * time.Second

// Entry is a secret's value and when it was set: in the store, as it was
// written; on file, the time the secrets file was last written.
type Entry struct {
	Value string    `json:"value"`
	Set   time.Time `json:"set"`
}

// DB is the store every replica shares as the secrets use it: values, a
// lock for the key check, and a notice to the replicas of each change.
type DB interface {
	shared.Tx
	shared.Locker
	shared.Notifier
}

// NewSharedSecrets keeps secrets in db, sealed under v (see OpenShared).
func NewSharedSecrets(db DB, v *Vault) *Secrets { return &Secrets{db: db, vault: v} }

// OpenShared opens the vault whose key seals what db, a store every
// replica shares, keeps: the key must come from DYNAMIC_MCP_VAULT_KEY (a
// key of this machine's keychain or key file would seal what no other
// replica opens), and must be the key the store's data is sealed with
// (see CheckShared).
func OpenShared(ctx context.Context, db DB, o Options) (*Vault, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.TrimSpace(getenv(EnvKey)) == "" {
		return nil, fmt.Errorf("with store:, every replica seals secrets and sign-ins with the same key: set %s (base64 of 32 bytes: openssl rand -base64 32) to the same value on each replica and wherever dynamic-mcp secret, auth or store import runs against the store", EnvKey)
	}
	v, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	// Under the check value's lock, so that two keys starting on an
	// empty store do not both leave theirs.
	ctx, cancel := context.WithTimeout(ctx, sharedWait)
	defer cancel()
	if err := db.Locked(ctx, checkNS, checkKey, sharedWait, func(tx shared.Tx) error { return CheckShared(ctx, tx, v) }); err != nil {
		return nil, err
	}
	return v, nil
}

// ErrWrongKey says a vault's key is not the key a shared store's data is
// sealed with.
var ErrWrongKey = errors.New("not the key the store's data is sealed with")

// CheckShared checks v's key against the store tx reads (the store
// itself, or a transaction of it): the first key to use a store leaves a
// sealed blob there, which any other key fails to open (an error naming
// where the key came from, not garbage later).
func CheckShared(ctx context.Context, tx shared.Tx, v *Vault) error {
	b, err := tx.Get(ctx, checkNS, checkKey)
	if errors.Is(err, shared.ErrNotFound) {
		// A store sealed into before there was a check value: its
		// first sealed value says whether this is its key.
		if err := probeSealed(ctx, tx, v); err != nil {
			return err
		}
		return tx.Put(ctx, checkNS, checkKey, v.Seal([]byte(checkLabel), checkLabel))
	}
	if err != nil {
		return err
	}
	if _, err := v.Open(b, checkLabel); err != nil {
		return fmt.Errorf("the vault key from %s is %w (another replica's, or a new one): every replica needs the same %s", v.KeySource(), ErrWrongKey, EnvKey)
	}
	return nil
}

// sealedLabels are namespaces of sealed values and what each value's key
// is sealed for: the secrets, and auth's sign-in records ("token", sealed
// for the server's name).
var sealedLabels = map[string]func(key string) string{
	SecretNS: secretLabel,
	"token":  func(key string) string { return key },
}

// probeSealed fails when a sealed value the store holds does not open
// under v.
func probeSealed(ctx context.Context, tx shared.Tx, v *Vault) error {
	for _, ns := range slices.Sorted(maps.Keys(sealedLabels)) {
		all, err := tx.All(ctx, ns)
		if err != nil {
			return err
		}
		for key, b := range all {
			if _, err := v.Open(b, sealedLabels[ns](key)); err != nil {
				return fmt.Errorf("the vault key from %s is %w (its %s/%s does not open): every replica needs the same %s", v.KeySource(), ErrWrongKey, ns, key, EnvKey)
			}
			break // one is enough
		}
	}
	return nil
}

// secretLabel is what the secret name is sealed for in a shared store.
func secretLabel(name string) string { return "secret:" + name }

// Shared reports whether the secrets are kept in a shared store
// (NewSharedSecrets), not a state directory's file.
func (s *Secrets) Shared() bool { return s.db != nil }

// Entries returns every secret by name, with when it was set.
func (s *Secrets) Entries() (map[string]Entry, error) {
	if s.db != nil {
		return s.sharedEntries()
	}
	m, err := s.All()
	if err != nil {
		return nil, err
	}
	var set time.Time
	if fi, err := os.Stat(s.path()); err == nil {
		set = fi.ModTime()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := make(map[string]Entry, len(m))
	for n, v := range m {
		out[n] = Entry{Value: v, Set: set}
	}
	return out, nil
}

// Put sets name to e's value; in a shared store, with e's time.
func (s *Secrets) Put(name string, e Entry) error {
	if s.db != nil {
		return s.sharedPut(name, e)
	}
	return s.Set(name, e.Value)
}

func (s *Secrets) sharedEntries() (map[string]Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	all, err := s.db.All(ctx, SecretNS)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Entry, len(all))
	for _, name := range slices.Sorted(maps.Keys(all)) {
		e, err := s.openEntry(name, all[name])
		if err != nil {
			return nil, err
		}
		out[name] = e
	}
	return out, nil
}

func (s *Secrets) sharedAll() (map[string]string, error) {
	es, err := s.sharedEntries()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(es))
	for n, e := range es {
		out[n] = e.Value
	}
	return out, nil
}

// sharedPut seals e for name, writes it and tells the replicas. It
// writes under the lock of the name, so that it never lands between the
// look and the write of an Add (sharedAdd).
func (s *Secrets) sharedPut(name string, e Entry) error {
	sealed, err := s.sealEntry(name, e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	if err := s.db.Locked(ctx, SecretNS, name, sharedWait, func(tx shared.Tx) error {
		return tx.Put(ctx, SecretNS, name, sealed)
	}); err != nil {
		return err
	}
	return s.db.Notify(ctx, SecretsChannel)
}

// sharedAdd is Add in the store: under the lock of the name, which
// sharedPut takes too, it writes value unless the name holds one.
func (s *Secrets) sharedAdd(name, value string) (held string, taken bool, err error) {
	sealed, err := s.sealEntry(name, Entry{Value: value, Set: time.Now()})
	if err != nil {
		return "", false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	err = s.db.Locked(ctx, SecretNS, name, sharedWait, func(tx shared.Tx) error {
		b, err := tx.Get(ctx, SecretNS, name)
		if errors.Is(err, shared.ErrNotFound) {
			return tx.Put(ctx, SecretNS, name, sealed)
		}
		if err != nil {
			return err
		}
		e, err := s.openEntry(name, b)
		held, taken = e.Value, true
		return err
	})
	if err != nil || taken {
		return held, taken, err
	}
	return "", false, s.db.Notify(ctx, SecretsChannel)
}

// sealEntry is e sealed for name, as the store keeps it.
func (s *Secrets) sealEntry(name string, e Entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return s.vault.Seal(b, secretLabel(name)), nil
}

// openEntry opens what the store keeps for name.
func (s *Secrets) openEntry(name string, b []byte) (Entry, error) {
	var e Entry
	plain, err := s.vault.Open(b, secretLabel(name))
	if err != nil {
		return e, fmt.Errorf("the store's secret %s: %w", name, err)
	}
	if err := json.Unmarshal(plain, &e); err != nil {
		return e, fmt.Errorf("the store's secret %s: %w", name, err)
	}
	return e, nil
}

// sharedDelete removes name and tells the replicas; it reports whether
// there was one.
func (s *Secrets) sharedDelete(name string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	if _, err := s.db.Get(ctx, SecretNS, name); errors.Is(err, shared.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := s.db.Delete(ctx, SecretNS, name); err != nil {
		return false, err
	}
	return true, s.db.Notify(ctx, SecretsChannel)
}

// Import copies from, a state directory's secrets (its Entries), into s,
// a shared store's: a secret the store does not have is copied, an older
// one updated, the same value left; one set in the store after the state
// directory's file was written is kept unless force. With dryRun nothing
// is written.
func (s *Secrets) Import(from map[string]Entry, force, dryRun bool) (map[string]shared.Outcome, error) {
	if s.db == nil {
		return nil, errors.New("secrets: import is into a shared store")
	}
	cur, err := s.sharedEntries()
	if err != nil {
		return nil, err
	}
	out := make(map[string]shared.Outcome, len(from))
	for _, name := range slices.Sorted(maps.Keys(from)) {
		e, c := from[name], cur[name]
		_, exists := cur[name]
		o := shared.Decide(exists, exists && c.Value == e.Value, exists && c.Set.After(e.Set), force)
		if o.Writes() && !dryRun {
			if err := s.sharedPut(name, e); err != nil {
				return out, err
			}
		}
		out[name] = o
	}
	return out, nil
}
