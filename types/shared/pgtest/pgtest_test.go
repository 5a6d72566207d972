//go:build unix

package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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

// A cluster is made in memory where there is room (memDir), and the
// directories of clusters whose process no longer runs are removed: those
// of this process and of a running one stay.
func TestClusterDirInMemorySweptWhenLeft(t *testing.T) {
	host, _ := url.Parse(Start(t))
	dir := host.Query().Get("host")
	if mem := memDir(); mem != "" && filepath.Dir(dir) != mem {
		t.Errorf("the cluster is in %s, want under %s", dir, mem)
	}
	if !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("pgtest-%d-", os.Getpid())) {
		t.Errorf("the cluster's directory %s is not named after this process", dir)
	}

	parent := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	names := map[string]bool{ // kept
		fmt.Sprintf("pgtest-%d-1", gone.Process.Pid): false,
		fmt.Sprintf("pgtest-%d-2", os.Getpid()):      true,
		fmt.Sprintf("pgtest-%d-3", live.Process.Pid): true,
		"pgtest-x-4": true,
		"other":      true,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(parent, name, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepLeft(parent)
	for name, kept := range names {
		if _, err := os.Stat(filepath.Join(parent, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}
