package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// SecretsFile holds the secrets, sealed, in the state directory.
const SecretsFile = "secrets.sealed"

// Secrets are the named secrets of a state directory (what the config's
// ${secret:NAME} references), sealed together in one file.
type Secrets struct {
	dir   string
	vault *Vault
	// db keeps the secrets in the store every replica shares in place of
	// dir's file (see NewSharedSecrets); nil: the file.
	db DB
}

// NewSecrets keeps secrets in dir (the state directory) under v.
func NewSecrets(dir string, v *Vault) *Secrets { return &Secrets{dir: dir, vault: v} }

func (s *Secrets) path() string { return filepath.Join(s.dir, SecretsFile) }

// All returns every secret by name.
func (s *Secrets) All() (map[string]string, error) {
	if s.db != nil {
		return s.sharedAll()
	}
	b, err := os.ReadFile(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	plain, err := s.vault.Open(b, SecretsFile)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(), err)
	}
	return m, nil
}

// Names returns the secrets' names, sorted.
func (s *Secrets) Names() ([]string, error) {
	m, err := s.All()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Set sets name to value.
func (s *Secrets) Set(name, value string) error {
	if s.db != nil {
		return s.sharedPut(name, Entry{Value: value, Set: time.Now()})
	}
	return s.change(func(m map[string]string) bool { m[name] = value; return true })
}

// Add sets name to value unless name is set already: then it writes
// nothing and returns the value name holds (taken). The look and the set
// are one step, so that a secret set meanwhile by another process (a
// `secret set`, another import) is never overwritten: on file, under the
// secrets' file lock; in a shared store, under the lock of the name,
// which Set takes too. (The OS keychain holds the vault's key alone,
// never a secret: it has no part in this.)
func (s *Secrets) Add(name, value string) (held string, taken bool, err error) {
	if s.db != nil {
		return s.sharedAdd(name, value)
	}
	err = s.change(func(m map[string]string) bool {
		held, taken = m[name]
		if taken {
			return false
		}
		m[name] = value
		return true
	})
	return held, taken, err
}

// Delete removes name; it reports whether there was one.
func (s *Secrets) Delete(name string) (bool, error) {
	if s.db != nil {
		return s.sharedDelete(name)
	}
	var had bool
	err := s.change(func(m map[string]string) bool { _, had = m[name]; delete(m, name); return true })
	return had, err
}

// change applies f to the secrets under a file lock, so two processes
// changing secrets do not lose either change; f returns false when it
// changed nothing, and nothing is written.
func (s *Secrets) change(f func(map[string]string) bool) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	l, err := filelock.Acquire(context.Background(), filepath.Join(s.dir, ".secrets.lock"), 30*time.Second)
	if err != nil {
		return fmt.Errorf("the secrets are busy: %w", err)
	}
	defer l.Unlock()
	m, err := s.All()
	if err != nil {
		return err
	}
	if !f(m) {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(), s.vault.Seal(b, SecretsFile), 0o600)
}
