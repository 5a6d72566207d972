package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// literalSecret is one literal secret an import found.
type literalSecret struct {
	server, where, key string // where: "env" or "headers"
	name               string // the vault's name for it
}

// literalSecrets finds the literal secrets of servers' env variables and
// headers (clients.LiteralSecret: named like one, or looking like a
// token; a ${VAR} is already out of the file).
func literalSecrets(servers []clients.Server, keys []string) []literalSecret {
	var out []literalSecret
	for i, s := range servers {
		for _, field := range []struct {
			where string
			m     map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} { // in this order, every run
			where, m := field.where, field.m
			for _, k := range sortedKeys(m) {
				if !clients.LiteralSecret(k, m[k]) {
					continue
				}
				out = append(out, literalSecret{server: s.Name, where: where, key: k, name: vaultName(keys[i], k)})
			}
		}
	}
	return out
}

// vaultName is the name a literal secret of a server is given in the
// vault: the server's name and the key (env variable or header) the
// secret is under, upper case, OWNER_KEY; the key alone when it already
// starts with the server's name (GITHUB_TOKEN of github, not
// GITHUB_GITHUB_TOKEN).
func vaultName(owner, key string) string {
	o, k := strings.ToUpper(nonName().ReplaceAllString(owner, "_")), strings.ToUpper(nonName().ReplaceAllString(key, "_"))
	if k == o || strings.HasPrefix(k, o+"_") {
		return k
	}
	return o + "_" + k
}

// nonName is what a name may not hold; compiled at first use, not at every start.
var nonName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_]+`) })

// moveSecrets keeps each literal secret of servers in the vault of the
// config at out's state directory and puts ${secret:NAME} in its place.
func moveSecrets(servers []clients.Server, found []literalSecret, out string, stdout io.Writer) error {
	var secrets *vault.Secrets
	if _, err := os.Stat(out); err == nil {
		// The config's vault: with store:, the store's.
		stateDir, uses, err := config.ScanSecrets(out)
		if err != nil {
			return err
		}
		s, _, closeStore, err := openSecrets(out, stateDir, "", uses, nil)
		if err != nil {
			return err
		}
		defer closeStore()
		secrets = s
	} else {
		v, err := vault.Open(context.Background(), vault.Options{Dir: config.Home()})
		if err != nil {
			return err
		}
		secrets = vault.NewSecrets(config.Home(), v)
	}
	for _, f := range found {
		for i := range servers {
			s := &servers[i]
			if s.Name != f.server {
				continue
			}
			m := s.Env
			if f.where == "headers" {
				m = s.Headers
			}
			// What the import read is escaped for the config ($ as $$);
			// the vault keeps the value itself.
			if err := secrets.Set(f.name, strings.ReplaceAll(m[f.key], "$$", "$")); err != nil {
				return err
			}
			m[f.key] = "${secret:" + f.name + "}"
			fmt.Fprintf(stdout, "moved %s %s of %s into the vault as ${secret:%s}\n", f.where, f.key, f.server, f.name)
		}
	}
	return nil
}
