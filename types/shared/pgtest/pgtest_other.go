//go:build !unix

package pgtest

import "testing"

// Start skips the test: the helper runs PostgreSQL on unix systems.
func Start(t testing.TB) string {
	t.Skip("pgtest runs PostgreSQL on unix systems only")
	return ""
}
