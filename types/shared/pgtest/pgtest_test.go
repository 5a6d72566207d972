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
	if ua.Host != ub.Host || ua.Path == ub.Path {
		t.Fatalf("%s and %s: want one cluster, two databases", a, b)
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
