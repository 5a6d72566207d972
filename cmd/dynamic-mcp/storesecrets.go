package main

import (
	"context"
	"log/slog"
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// openSecrets is where `secret` keeps the secret name (every name, for
// list): the config's store (store: postgres://...), sealed under
// DYNAMIC_MCP_VAULT_KEY, or the state directory's vault. A secret that
// only store: itself uses stays in the state directory: the store cannot
// hold what opens it.
func openSecrets(configPath, stateDir, name string, uses map[string][]string, logger *slog.Logger) (*vault.Secrets, *vault.Vault, func(), error) {
	url := ""
	if name == "" || !slices.Equal(uses[name], []string{"store"}) {
		var err error
		if url, err = configs.ScanStore(configPath, stateDir); err != nil {
			return nil, nil, nil, err
		}
	}
	if url == "" {
		v, err := vault.Open(context.Background(), vault.Options{Dir: stateDir, Logger: logger})
		if err != nil {
			return nil, nil, nil, err
		}
		return vault.NewSecrets(stateDir, v), v, func() {}, nil
	}
	return secrets.OpenStore(context.Background(), url, stateDir, logger)
}

// inStore says, after what was done, that it was done in the store.
func inStore(s *vault.Secrets) string {
	if s.Shared() {
		return " in the store"
	}
	return ""
}

// watchSharedSecrets sends on changed (without blocking: one pending
// reload covers any number of changes) each time a secret is set or
// removed in db, until ctx ends; without a store it returns at once.
func watchSharedSecrets(ctx context.Context, db shared.Notifier, changed chan<- struct{}) {
	if db == nil {
		return
	}
	db.Watch(ctx, vault.SecretsChannel, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
}
