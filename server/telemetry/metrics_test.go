package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// The hub's counters of what went wrong are scraped as counters, and left
// out where no func reads them.
func TestMetricsPanicsAndAuditLost(t *testing.T) {
	mgr := upstream.New(&config.Config{StateDir: t.TempDir()}, nil)
	scrape := func(opts MetricsOptions) string {
		rec := httptest.NewRecorder()
		NewMetrics(mgr, opts).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	got := scrape(MetricsOptions{Panics: func() uint64 { return 3 }, AuditLost: func() uint64 { return 5 }})
	for _, want := range []string{"# TYPE dynamic_mcp_panics_total counter\ndynamic_mcp_panics_total 3\n",
		"# TYPE dynamic_mcp_audit_records_lost_total counter\ndynamic_mcp_audit_records_lost_total 5\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if got := scrape(MetricsOptions{}); strings.Contains(got, "dynamic_mcp_panics_total") || strings.Contains(got, "dynamic_mcp_audit_records_lost_total") {
		t.Error("counters with no func to read them are scraped")
	}
}
