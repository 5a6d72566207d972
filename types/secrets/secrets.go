// Package secrets reads the secrets a config's ${secret:NAME} refer to:
// the vault of the state directory (sealed under the key of the OS
// keychain or DYNAMIC_MCP_VAULT_KEY), or, with store:, the store's, which
// every replica shares. cmd hands Source to config.Loader: parsing a
// config opens nothing of its own, and a config without a reference never
// touches the vault, the keychain or the database.
package secrets

import (
	"context"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// Source is config.Secrets on the vault and the store.
type Source struct{}

// File returns the secrets of the vault of stateDir.
func (Source) File(stateDir string) (map[string]string, error) {
	v, err := vault.Open(context.Background(), vault.Options{Dir: stateDir})
	if err != nil {
		return nil, err
	}
	return vault.NewSecrets(stateDir, v).All()
}

// Store returns the secrets of the store at url (see OpenStore).
func (Source) Store(ctx context.Context, url, stateDir string) (map[string]string, error) {
	s, _, closeStore, err := OpenStore(ctx, url, stateDir, nil)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	return s.All()
}

// OpenStore opens the secrets of the store at url, sealed with the vault
// key of DYNAMIC_MCP_VAULT_KEY (checked against the store's), and that
// vault; closeStore lets go of the store.
func OpenStore(ctx context.Context, url, stateDir string, logger *slog.Logger) (_ *vault.Secrets, _ *vault.Vault, closeStore func(), _ error) {
	db, err := pgstore.Open(ctx, url)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := vault.OpenShared(ctx, db, vault.Options{Dir: stateDir, Logger: logger})
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return vault.NewSharedSecrets(db, v), v, db.Close, nil
}
