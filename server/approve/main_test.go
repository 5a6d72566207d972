package approve

import (
	"os"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// TestMain keeps one PostgreSQL cluster for the package's tests, each
// with a database of its own (pgtest.Shared): without it, two tests that
// do not overlap in time start a cluster each, an initdb apiece, which
// is seconds of a loaded machine.
func TestMain(m *testing.M) {
	os.Exit(pgtest.Shared(m).Run())
}
