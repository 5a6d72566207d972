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

// watchSharedSecrets sends on changed why the config is to be read again
// (without blocking: one pending reload covers any number of changes)
// each time a secret is set or removed in db, until ctx ends; without a
// store it returns at once. Once the watch first listens, a secret set
// since the config was read at start is read (a reload), when the config
// uses one from the store (uses, the config's SecretUses): without one,
// a reload would find nothing new, and a file change that adds one is a
// reload of its own.
func watchSharedSecrets(ctx context.Context, db shared.Notifier, uses map[string][]string, changed chan<- string) {
	if db == nil {
		return
	}
	first := true
	db.Watch(ctx, vault.SecretsChannel, func() {
		reason := "a secret changed in the store"
		if first {
			first = false
			if !usesStoreSecret(uses) {
				return
			}
			reason = "the store's secrets, read again once their changes are heard"
		}
		select {
		case changed <- reason:
		default:
		}
	})
}

// usesStoreSecret reports whether a config whose SecretUses are uses
// takes a secret from the store: any but one that only store: uses,
// which stays in the state directory (see openSecrets).
func usesStoreSecret(uses map[string][]string) bool {
	for _, at := range uses {
		if !slices.Equal(at, []string{"store"}) {
			return true
		}
	}
	return false
}
