package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	rateLimitedDesc = prometheus.NewDesc("dynamic_mcp_rate_limited_total",
		"Calls over a policy rule's rate limit (refused, or asked about with then: prompt), by the rule's group (empty for a global rule) and name.",
		[]string{"group", "rule"}, nil)
	rateBucketsDesc = prometheus.NewDesc("dynamic_mcp_rate_buckets",
		"Counters the policy rules' rate limits keep now (one per rule and session, profile or hub).", nil, nil)
	rateEvictionsDesc = prometheus.NewDesc("dynamic_mcp_rate_buckets_evicted_total",
		"Rate limit counters dropped, least recently used first, to keep their number bounded.", nil, nil)
)

// rateCollector reads, at each scrape, what the loop guards (policy
// rate:) counted. The rule label takes rule names from the config: a
// bounded set.
type rateCollector struct{ opts MetricsOptions }

func (c *rateCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.opts.RateLimited != nil {
		ch <- rateLimitedDesc
	}
	if c.opts.RateBuckets != nil {
		ch <- rateBucketsDesc
		ch <- rateEvictionsDesc
	}
}

func (c *rateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.opts.RateLimited != nil {
		for group, rules := range c.opts.RateLimited() {
			for rule, n := range rules {
				ch <- prometheus.MustNewConstMetric(rateLimitedDesc, prometheus.CounterValue, float64(n), group, rule)
			}
		}
	}
	if c.opts.RateBuckets != nil {
		buckets, evictions := c.opts.RateBuckets()
		ch <- prometheus.MustNewConstMetric(rateBucketsDesc, prometheus.GaugeValue, float64(buckets))
		ch <- prometheus.MustNewConstMetric(rateEvictionsDesc, prometheus.CounterValue, float64(evictions))
	}
}
