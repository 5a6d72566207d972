package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	resultsCutDesc = prometheus.NewDesc("dynamic_mcp_results_cut_total",
		"Tool results cut to fit a client's max_result.", nil, nil)
	resultsKeptDesc = prometheus.NewDesc("dynamic_mcp_results_kept",
		"Whole tool results kept now for their sessions to read in pages (dynamic-mcp://results/<id>).", nil, nil)
	resultsBytesDesc = prometheus.NewDesc("dynamic_mcp_results_kept_bytes",
		"Bytes the kept tool results take, counted against the store's bound (64 MiB).", nil, nil)
	resultsEvictedDesc = prometheus.NewDesc("dynamic_mcp_results_evicted_total",
		"Kept tool results dropped before their time, oldest first, to stay within the store's bounds.", nil, nil)
)

// resultsCollector reads, at each scrape, the counts of the results cut
// to fit max_result and kept whole.
type resultsCollector struct{ opts MetricsOptions }

func (c *resultsCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.opts.Results != nil {
		ch <- resultsCutDesc
		ch <- resultsKeptDesc
		ch <- resultsBytesDesc
		ch <- resultsEvictedDesc
	}
}

func (c *resultsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.opts.Results == nil {
		return
	}
	cut, kept, bytes, evicted := c.opts.Results()
	ch <- prometheus.MustNewConstMetric(resultsCutDesc, prometheus.CounterValue, float64(cut))
	ch <- prometheus.MustNewConstMetric(resultsKeptDesc, prometheus.GaugeValue, float64(kept))
	ch <- prometheus.MustNewConstMetric(resultsBytesDesc, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(resultsEvictedDesc, prometheus.CounterValue, float64(evicted))
}
