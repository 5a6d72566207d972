package relay

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test here starts has ended by the time the tests are
// over.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
