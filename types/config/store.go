package config

import (
	"net/url"

	"gopkg.in/yaml.v3"
)

// storeURL reads store:, the shared database of a hub's replicas: a
// PostgreSQL connection URL (postgres:// or postgresql://, with the
// parameters pgx takes, pool_max_conns among them), ${VAR} and
// ${secret:NAME} substituted. Errors never quote it: it may hold a
// password.
func (p *parser) storeURL(v *yaml.Node, key string) string {
	s, ok := p.strOK(v, key)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		p.fail(v, key, "is not a URL: want postgres://user@host/database")
		return ""
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		p.fail(v, key, "must be a postgres:// (or postgresql://) URL; without store: the hub keeps its state in the state directory")
		return ""
	}
	return s
}
