package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Callers are scraped bounded: sessions by how their caller signed in
// (every kind, 0 too; an unknown kind as other), and a count of distinct
// callers, never a series per user.
func TestMetricsCallers(t *testing.T) {
	mgr := upstream.New(&config.Config{StateDir: t.TempDir()}, nil)
	rec := httptest.NewRecorder()
	NewMetrics(mgr, MetricsOptions{Callers: func() (map[string]int, int) {
		return map[string]int{"jwt": 5, "token": 1, "weird-kind-of-alice": 2}, 4
	}}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	got := rec.Body.String()
	for _, want := range []string{`dynamic_mcp_caller_sessions{kind="jwt"} 5`, `dynamic_mcp_caller_sessions{kind="token"} 1`,
		`dynamic_mcp_caller_sessions{kind="none"} 0`, `dynamic_mcp_caller_sessions{kind="local"} 0`, `dynamic_mcp_caller_sessions{kind="other"} 2`,
		"dynamic_mcp_callers 4"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "alice") {
		t.Error("a kind outside the known ones became a label value")
	}
}
