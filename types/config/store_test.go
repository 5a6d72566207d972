package config

import (
	"strings"
	"testing"
)

// store: is a PostgreSQL URL, with ${VAR} references as everywhere; any
// other scheme is refused with its line, and the error never quotes the
// URL (it may hold a password). Without it the state stays in the state
// directory.
func TestStore(t *testing.T) {
	const rest = "groups:\n  g: { description: d, command: echo }\n"
	t.Setenv("PGPASS", "hunter2")
	cfg, err := Parse("c.yaml", strings.NewReader("store: postgres://hub:${PGPASS}@db.internal:5432/hub?sslmode=verify-full&pool_max_conns=8\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "postgres://hub:hunter2@db.internal:5432/hub?sslmode=verify-full&pool_max_conns=8" {
		t.Errorf("store = %q", cfg.Store)
	}
	if cfg, err := Parse("c.yaml", strings.NewReader("store: postgresql:///hub?host=/run/postgresql\n"+rest)); err != nil || cfg.Store == "" {
		t.Errorf("postgresql:// over a socket: %q, %v", cfg.Store, err)
	}
	if cfg, err := Parse("c.yaml", strings.NewReader(rest)); err != nil || cfg.Store != "" {
		t.Errorf("no store: %q, %v", cfg.Store, err)
	}
	for _, c := range []struct{ store, want string }{
		{"mysql://hub:hunter2@db/hub", "c.yaml:1: store: must be a postgres:// (or postgresql://) URL"},
		{"/var/lib/hub", "c.yaml:1: store: must be a postgres://"},
		{"\"postgres://hub:hunter2@db/%zz\"", "c.yaml:1: store: is not a URL"},
		{"[postgres://db]", "c.yaml:1: store: must be a string"},
		{"postgres://${NOPE_UNSET_VAR}@db/hub", "NOPE_UNSET_VAR"},
	} {
		_, err := Parse("c.yaml", strings.NewReader("store: "+c.store+"\n"+rest))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want %q", c.store, err, c.want)
		}
	}
}
