package signin

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// TestMain runs the tests on one PostgreSQL cluster, each test with a
// database of its own in it (pgtest.Shared); no goroutine outlives them
// (a store's connection, the watch of shared sign-ins that Close stops).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Shared(m))
}
