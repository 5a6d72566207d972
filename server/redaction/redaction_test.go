package redaction

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// fileSecrets are the secrets of a vault, without one.
type fileSecrets map[string]string

func (f fileSecrets) File(string) (map[string]string, error) { return f, nil }
func (f fileSecrets) Store(context.Context, string, string) (map[string]string, error) {
	return nil, nil
}

// What a hop brings back loses the config's resolved secrets before any
// stage outside it, or an observer, sees it.
func TestStageRedacts(t *testing.T) {
	yaml := "state_dir: " + t.TempDir() + "\ngroups:\n  g:\n    description: d\n    url: https://example.com/mcp\n    headers: {Authorization: \"Bearer ${secret:K}\"}\n"
	cfg, err := config.Loader{Secrets: fileSecrets{"K": "sk-live-0123456789"}}.Parse("t.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	echo := call.HopFunc(func(ctx context.Context, h *call.Hop) (json.RawMessage, upstream.ConnID, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"key sk-live-0123456789"}]}`), 7, nil
	})
	res, conn, err := Stage{}.Hop(t.Context(), &call.Hop{Config: cfg, Secrets: cfg.Secrets()}, echo)
	if err != nil || conn != 7 || strings.Contains(string(res), "sk-live-0123456789") {
		t.Fatalf("hop answered %s on %d, %v", res, conn, err)
	}
}
