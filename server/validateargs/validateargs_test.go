package validateargs

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A schema that cannot be compiled is logged once, however often its tool
// is called; a remote $ref is refused by the loader, not fetched.
func TestArgSchemaLoggedOnce(t *testing.T) {
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil)) // one goroutine: no lock needed
	var a Schemas
	for range 3 {
		if a.get(json.RawMessage(`{"type":"object","properties":{"x":{"type":12}}}`), "broken", &config.Server{Group: "f", Name: "f"}, logger).schema != nil {
			t.Fatal("an invalid schema compiled")
		}
		if a.get(json.RawMessage(`{"$ref":"https://example.invalid/s.json"}`), "remote", &config.Server{Group: "f", Name: "f"}, logger).schema != nil {
			t.Fatal("a schema with a remote $ref compiled")
		}
	}
	if n := strings.Count(log.String(), "cannot be compiled"); n != 2 || !strings.Contains(log.String(), "remote $ref not fetched") {
		t.Errorf("want one warning per schema, the remote one refused by the loader:\n%s", log.String())
	}
}
