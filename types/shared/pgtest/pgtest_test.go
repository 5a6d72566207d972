//go:build unix

package pgtest

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Two tests' databases are in one cluster and each its own; a test's
// database is gone when it ends.
func TestDatabasesOfTheirOwnInOneCluster(t *testing.T) {
	a := Start(t)
	var inner string
	t.Run("inner", func(t *testing.T) { inner = Start(t) })
	b := Start(t)
	ua, _ := url.Parse(a)
	ub, _ := url.Parse(b)
	// Over the cluster's socket, on no TCP port.
	if ua.Host != "" || ua.Query().Get("host") == "" || ua.Query().Get("host") != ub.Query().Get("host") || ua.Path == ub.Path {
		t.Fatalf("%s and %s: want one cluster's socket, two databases", a, b)
	}
	exec := func(u, sql string) error {
		c, err := pgx.Connect(t.Context(), u)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(t.Context(), sql)
		return err
	}
	if err := exec(a, "DO $$ BEGIN IF current_setting('listen_addresses') <> '' THEN RAISE 'listens on %', current_setting('listen_addresses'); END IF; END $$"); err != nil {
		t.Errorf("the cluster listens on TCP: %v", err)
	}
	if err := exec(a, "CREATE TABLE mine (x int)"); err != nil {
		t.Fatal(err)
	}
	if err := exec(b, "SELECT * FROM mine"); err == nil {
		t.Error("b sees a's table")
	}
	if err := exec(inner, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("the database of a test that ended (%s): %v, want gone", inner, err)
	}
}
