package vault

import (
	"os"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// TestMain runs the tests on one PostgreSQL cluster, each test with a
// database of its own in it (pgtest.Shared).
func TestMain(m *testing.M) {
	os.Exit(pgtest.Shared(m).Run())
}
