package upstream

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A server that floods its stdout with lines that are not JSON-RPC gets
// maxJunkLogged warnings and one that says the rest go to debug, however
// many it writes: its flood does not become the hub's log's.
func TestJunkLinesWarnedBounded(t *testing.T) {
	var log bytes.Buffer
	c := &conn{logger: slog.New(slog.NewTextHandler(&log, nil))} // info and above, as a hub logs by default
	for i := range 1000 {
		c.refused(fmt.Errorf("%w", jsonrpc.ErrNotJSON), fmt.Appendf(nil, "junk %d", i))
	}
	lines := strings.Count(log.String(), "\n")
	if lines != maxJunkLogged+1 || !strings.Contains(log.String(), "junk 9") || strings.Contains(log.String(), "junk 10") ||
		!strings.Contains(log.String(), "logged at debug from now on") {
		t.Errorf("%d lines logged for 1,000 junk lines:\n%s", lines, log.String())
	}
}
