package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// The result store's counts are scraped; left out where no func reads
// them.
func TestMetricsResults(t *testing.T) {
	mgr := upstream.New(&config.Config{StateDir: t.TempDir()}, nil)
	scrape := func(opts MetricsOptions) string {
		rec := httptest.NewRecorder()
		NewMetrics(mgr, opts).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	got := scrape(MetricsOptions{Results: func() (uint64, int, int, uint64) { return 5, 3, 123456, 2 }})
	for _, want := range []string{
		"# TYPE dynamic_mcp_results_cut_total counter\ndynamic_mcp_results_cut_total 5\n",
		"# TYPE dynamic_mcp_results_kept gauge\ndynamic_mcp_results_kept 3\n",
		"# TYPE dynamic_mcp_results_kept_bytes gauge\ndynamic_mcp_results_kept_bytes 123456\n",
		"# TYPE dynamic_mcp_results_evicted_total counter\ndynamic_mcp_results_evicted_total 2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if got := scrape(MetricsOptions{}); strings.Contains(got, "dynamic_mcp_results_") {
		t.Error("result metrics with no func to read them are scraped")
	}
}
