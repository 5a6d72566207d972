package vault

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// ErrNoKey says a state directory has no key of its own: no key file and
// no keychain item.
var ErrNoKey = errors.New("no vault key of its own")

// Find returns the vault of the key a state directory's own (its key
// file, else its keychain item), without making one and without looking
// at DYNAMIC_MCP_VAULT_KEY: what reads a state directory sealed on
// another machine or before the key came from the environment (`store
// import`). ErrNoKey when it has none.
func Find(ctx context.Context, o Options) (*Vault, error) {
	if o.Keychain == nil {
		o.Keychain = OS
	}
	if o.Wait == 0 {
		o.Wait = 3 * time.Second
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if k, err := readKeyFile(filepath.Join(dir, KeyFile)); err == nil {
		return New(k, "file")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s, err := bounded(ctx, o.Wait, func() (string, error) { return o.Keychain.Get(service, dir) })
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNoKey
	}
	if err != nil {
		return nil, fmt.Errorf("the keychain did not answer for %s: %w", dir, err)
	}
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(k) != KeySize {
		return nil, fmt.Errorf("the keychain item %q for %s is not a vault key", service, dir)
	}
	return New(k, "keychain")
}
