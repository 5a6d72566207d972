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

// The loop guards' counts are scraped: calls over each rule's rate by the
// rule, and the counters kept and evicted; left out where no func reads
// them.
func TestMetricsRateLimits(t *testing.T) {
	mgr := upstream.New(&config.Config{StateDir: t.TempDir()}, nil)
	scrape := func(opts MetricsOptions) string {
		rec := httptest.NewRecorder()
		NewMetrics(mgr, opts).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	got := scrape(MetricsOptions{
		RateLimited: func() map[string]map[string]uint64 {
			return map[string]map[string]uint64{"gh": {"issues": 4}, "": {"policy[0]": 1}}
		},
		RateBuckets: func() (int, uint64) { return 7, 2 },
	})
	for _, want := range []string{
		`dynamic_mcp_rate_limited_total{group="gh",rule="issues"} 4` + "\n",
		`dynamic_mcp_rate_limited_total{group="",rule="policy[0]"} 1` + "\n",
		"# TYPE dynamic_mcp_rate_buckets gauge\ndynamic_mcp_rate_buckets 7\n",
		"# TYPE dynamic_mcp_rate_buckets_evicted_total counter\ndynamic_mcp_rate_buckets_evicted_total 2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if got := scrape(MetricsOptions{}); strings.Contains(got, "dynamic_mcp_rate_") {
		t.Error("rate metrics with no func to read them are scraped")
	}
}
