//go:build !unix

package pgtest

import "testing"

// Start skips the test: the helper runs PostgreSQL on unix systems.
func Start(t testing.TB) string {
	t.Skip("pgtest runs PostgreSQL on unix systems only")
	return ""
}

// M is what a TestMain runs: *testing.M, or a wrapper of it.
type M interface{ Run() int }

// Shared runs m as it is: there is no cluster to keep.
func Shared(m M) M { return m }
