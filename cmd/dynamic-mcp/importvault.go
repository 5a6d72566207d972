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
	at                 int    // the server's index in the import
	server, where, key string // where: "env" or "headers"
	name               string // the vault's plain name for it (vaultName)
}

// literalSecrets finds the literal secrets of servers' env variables and
// headers (clients.LiteralSecret: named like one, or looking like a
// token; a ${VAR} is already out of the file), of the servers i the
// config takes (take(i)).
func literalSecrets(servers []clients.Server, keys []string, take func(i int) bool) []literalSecret {
	var out []literalSecret
	for i, s := range servers {
		if !take(i) {
			continue
		}
		for _, where := range []string{"env", "headers"} {
			m := secretsOf(&servers[i], where)
			for _, k := range sortedKeys(m) {
				if !clients.LiteralSecret(k, m[k]) {
					continue
				}
				out = append(out, literalSecret{at: i, server: s.Name, where: where, key: k, name: vaultName(keys[i], k)})
			}
		}
	}
	return out
}

// secretsOf is s's env ("env") or headers.
func secretsOf(s *clients.Server, where string) map[string]string {
	if where == "env" {
		return s.Env
	}
	return s.Headers
}

// vaultName is the name a literal secret of a server is given in the
// vault: the server's name and the key (env variable or header) the
// secret is under, upper case, OWNER_KEY; the key alone when it already
// starts with the server's name (GITHUB_TOKEN of github, not
// GITHUB_GITHUB_TOKEN). A name that would start with a digit (a server
// named 1password) starts with _ instead: ${secret:1PASSWORD_TOKEN} is no
// name in the config, nor for secret set.
func vaultName(owner, key string) string {
	o, k := strings.ToUpper(nonName().ReplaceAllString(owner, "_")), strings.ToUpper(nonName().ReplaceAllString(key, "_"))
	name := o + "_" + k
	if k == o || strings.HasPrefix(k, o+"_") {
		name = k
	}
	if name != "" && name[0] >= '0' && name[0] <= '9' {
		name = "_" + name
	}
	return name
}

// nonName is what a name may not hold; compiled at first use, not at every start.
var nonName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_]+`) })

// moveSecrets keeps each literal secret of servers in the vault of the
// config at out's state directory and puts ${secret:NAME} in its place.
func moveSecrets(servers []clients.Server, found []literalSecret, out string, stdout io.Writer) error {
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
		return moveSecretsInto(s, servers, found, stdout)
	}
	v, err := vault.Open(context.Background(), vault.Options{Dir: config.Home()})
	if err != nil {
		return err
	}
	return moveSecretsInto(vault.NewSecrets(config.Home(), v), servers, found, stdout)
}

// vaultWriter is the vault as import writes it (*vault.Secrets).
type vaultWriter interface {
	All() (map[string]string, error)
	Add(name, value string) (held string, taken bool, err error)
}

// moveSecretsInto is moveSecrets into secrets. No secret in the vault is
// overwritten: a name that holds another value is passed over for the
// next free one (NAME_2, NAME_3 ...), and a name that holds the same
// value is used as it is; that holds too of a name another process sets
// while the import runs (Add sets only a name that is free).
func moveSecretsInto(secrets vaultWriter, servers []clients.Server, found []literalSecret, stdout io.Writer) error {
	have, err := secrets.All()
	if err != nil {
		return err
	}
	for _, f := range found {
		m := secretsOf(&servers[f.at], f.where)
		// What the import read is escaped for the config ($ as $$);
		// the vault keeps the value itself.
		value := strings.ReplaceAll(m[f.key], "$$", "$")
		name, there := freeName(have, f.name, value)
		for !there {
			held, taken, err := secrets.Add(name, value)
			if err != nil {
				return err
			}
			if !taken {
				have[name] = value
				break
			}
			// Set since the vault was read: what was set is kept.
			have[name] = held
			name, there = freeName(have, f.name, value)
		}
		m[f.key] = "${secret:" + name + "}"
		var why string
		switch {
		case name != f.name:
			why = fmt.Sprintf(" (not %s: the vault's %s is another secret)", f.name, f.name)
		case there:
			why = " (already there)"
		}
		fmt.Fprintf(stdout, "moved %s %s of %s into the vault as ${secret:%s}%s\n", f.where, f.key, f.server, name, why)
	}
	return nil
}

// freeName is the vault name for value: plain, or plain_2, plain_3 ...,
// the first that is not in have or holds value there (there: it does).
func freeName(have map[string]string, plain, value string) (name string, there bool) {
	name = plain
	for n := 2; ; n++ {
		v, ok := have[name]
		if !ok || v == value {
			return name, ok
		}
		name = fmt.Sprintf("%s_%d", plain, n)
	}
}
